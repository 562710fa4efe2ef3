package main

import (
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/golden"
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

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestPrintSummaryGolden(t *testing.T) {
	clean := result{Queued: 20, Completed: 20, Conclusions: map[string]int{"success": 19, "failure": 1},
		Latencies: []time.Duration{300 * time.Millisecond, time.Second, 1400 * time.Millisecond, 2300 * time.Millisecond},
		Launched:  21, Peak: 4, MaxRunners: 4, DaemonSaid: "daemon stopped; no runner left running"}
	leaky := clean
	leaky.Completed, leaky.Conclusions = 19, map[string]int{"success": 19}
	leaky.Leaks = leaks{Registrations: []string{"runner-manager-abc-0000000007"},
		Processes: []process{{PID: 4242, Cmd: "/tmp/d/state/runners/abc-0000000007/bin/Runner.Listener run"}},
		Dirs:      []string{"/tmp/d/state/runners/abc-0000000007"}}
	nothing := result{Queued: 2, MaxRunners: 4}
	for name, r := range map[string]result{"clean": clean, "leaky": leaky, "nothing-ran": nothing} {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			printSummary(&b, r)
			golden.Check(t, filepath.Join("testdata", "summary-"+name+".golden"), []byte(b.String()), *update)
		})
	}
}
