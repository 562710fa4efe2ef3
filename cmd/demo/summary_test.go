package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	s := time.Second
	tests := []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{nil, 50, 0},
		{[]time.Duration{3 * s}, 95, 3 * s},
		{[]time.Duration{4 * s, 1 * s, 3 * s, 2 * s}, 50, 2 * s},
		{[]time.Duration{4 * s, 1 * s, 3 * s, 2 * s}, 95, 4 * s},
		{[]time.Duration{5 * s, 1 * s, 2 * s, 3 * s, 4 * s, 6 * s, 7 * s, 8 * s, 9 * s, 10 * s}, 90, 9 * s},
	}
	for _, tc := range tests {
		if got := percentile(tc.in, tc.p); got != tc.want {
			t.Errorf("p%d of %v = %s, want %s", tc.p, tc.in, got, tc.want)
		}
	}
}

func TestResultFailure(t *testing.T) {
	ok := result{Queued: 3, Completed: 3, Peak: 2, MaxRunners: 4}
	tests := []struct {
		name string
		r    func(r result) result
		want string // "" = success
	}{
		{"all done, nothing left", func(r result) result { return r }, ""},
		{"a job not done", func(r result) result { r.Completed = 2; return r }, "1 of 3 jobs did not complete"},
		{"capacity exceeded", func(r result) result { r.Peak = 5; return r }, "above max_runners 4"},
		{"a leak", func(r result) result { r.Leaks.Dirs = []string{"/x"}; return r }, "runners leaked: 1"},
		{"daemon killed", func(r result) result { r.DaemonErr = errors.New("killed"); return r }, "did not stop cleanly"},
	}
	for _, tc := range tests {
		err := tc.r(ok).failure()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: unexpected failure %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: failure = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
}

func TestPrintSummary(t *testing.T) {
	var b strings.Builder
	printSummary(&b, result{Queued: 2, Completed: 2, Conclusions: map[string]int{"success": 1, "failure": 1},
		Latencies: []time.Duration{time.Second, 3 * time.Second}, Launched: 3, Peak: 2, MaxRunners: 4,
		DaemonSaid: "daemon stopped; no runner left running",
		Leaks:      leaks{Processes: []process{{PID: 42, Cmd: "Runner.Listener run"}}}})
	for _, want := range []string{
		"jobs completed     2 of 2 (1 failure, 1 success)",
		"scale-up latency   p50 1.0s, p95 3.0s",
		"peak runners       2 at once (max_runners 4)",
		"daemon             daemon stopped; no runner left running",
		"leaked process       pid 42: Runner.Listener run",
		"runners leaked: 1",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
