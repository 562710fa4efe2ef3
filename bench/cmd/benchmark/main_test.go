package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestParseBenchReadsNamesIterationsAndMetrics(t *testing.T) {
	out := `goos: linux
BenchmarkTransitionSynced-2   	    7437	    289171 ns/op
BenchmarkLive10000/live=100-2           	     466	   5169299 ns/op
BenchmarkReload1000-2 3 769210613 ns/op 17.93 apply-ms/op 1.000 changed/op 1000 passes-woken/op
PASS
ok  	github.com/runner-manager/runner-manager/journal	9.857s`
	got := parseBench(out)
	if len(got) != 3 {
		t.Fatalf("parsed %d results, want 3: %v", len(got), got)
	}
	if r := got["BenchmarkTransitionSynced"]; r.N != 7437 || r.Metrics["ns/op"] != 289171 {
		t.Errorf("TransitionSynced = %+v", r)
	}
	if r := got["BenchmarkLive10000/live=100"]; r.N != 466 {
		t.Errorf("sub-benchmark name lost: %v", got)
	}
	if r := got["BenchmarkReload1000"]; r.Metrics["passes-woken/op"] != 1000 || r.Metrics["apply-ms/op"] != 17.93 {
		t.Errorf("custom metrics = %v", r.Metrics)
	}
}

func TestProcParsers(t *testing.T) {
	status := "Name:\trunner-manager\nVmPeak:\t  9000 kB\nVmHWM:\t   52000 kB\nVmRSS:\t   41236 kB\nThreads: 9\n"
	if rss, err := statusKiB(status, "VmRSS:"); err != nil || rss != 41236 {
		t.Errorf("VmRSS = %d, %v", rss, err)
	}
	if hwm, err := statusKiB(status, "VmHWM:"); err != nil || hwm != 52000 {
		t.Errorf("VmHWM = %d, %v", hwm, err)
	}
	if _, err := statusKiB("Name: x\n", "VmRSS:"); err == nil {
		t.Error("a status without VmRSS must fail")
	}
	// The command name holds a space and a parenthesis; utime 250 and stime 50 ticks = 3 s.
	stat := "4242 (runner (x) y) S 1 4242 4242 0 -1 4194560 2000 0 0 0 250 50 0 0 20 0 9 0 100 0 0"
	cpu, err := parseCPU(stat)
	if err != nil || cpu != 3*time.Second {
		t.Errorf("cpu = %v, %v", cpu, err)
	}
	if _, err := parseCPU("4242 (x) S 1"); err == nil {
		t.Error("a short stat must fail")
	}
}

func TestPercentileAndRates(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 20; i++ {
		d = append(d, time.Duration(21-i)*time.Second)
	}
	if p := percentile(d, 50); p != 10*time.Second {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(d, 95); p != 19*time.Second {
		t.Errorf("p95 = %v", p)
	}
	if p := percentile(d, 100); p != 20*time.Second {
		t.Errorf("max = %v", p)
	}
	if percentile(nil, 50) != 0 {
		t.Error("empty percentile")
	}
	if got := perHour(300, time.Minute, 100); got != 180 {
		t.Errorf("per hour = %v, want 180", got)
	}
}

func TestCounterClassifiesAndCounts304s(t *testing.T) {
	sim := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != "" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write([]byte("{}"))
	})
	c := &counter{next: sim, c: counts{ByKind: map[string]int{}}}
	before := c.snapshot()
	for _, req := range []struct{ method, path, etag string }{
		{"GET", "/repos/acme/r0001/actions/runs", ""},
		{"GET", "/repos/acme/r0001/actions/runs", `"x"`},
		{"GET", "/repos/acme/r0001/actions/runs/5/jobs", ""},
		{"GET", "/repos/acme/r0001/actions/runners", `"y"`},
		{"POST", "/repos/acme/r0001/actions/runners/generate-jitconfig", ""},
		{"DELETE", "/repos/acme/r0001/actions/runners/7", ""},
	} {
		r := httptest.NewRequest(req.method, req.path, nil)
		if req.etag != "" {
			r.Header.Set("If-None-Match", req.etag)
		}
		c.ServeHTTP(httptest.NewRecorder(), r)
	}
	d := c.snapshot().minus(before)
	if d.Requests != 6 || d.NotModified != 2 {
		t.Fatalf("requests %d, 304s %d; want 6, 2", d.Requests, d.NotModified)
	}
	want := "DELETE runner 1, GET run jobs 1, GET runners 1, GET runs 2, POST generate-jitconfig 1"
	if got := kinds(d); got != want {
		t.Errorf("kinds = %q, want %q", got, want)
	}
}

func TestSelectParts(t *testing.T) {
	all, err := selectParts("")
	if err != nil || len(all) != len(allParts) {
		t.Fatalf("default = %v, %v", all, err)
	}
	some, err := selectParts("poll, idle100")
	if err != nil || !some["poll"] || !some["idle100"] || some["webhook"] {
		t.Fatalf("poll,idle100 = %v, %v", some, err)
	}
	if _, err := selectParts("poll,bogus"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown part: %v", err)
	}
}

func TestRenderWritesMeasuredFiguresAndCommands(t *testing.T) {
	r := results{
		Machine: machine{Date: time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC), Nproc: "2", CPU: "AMD EPYC"},
		Command: "bin/benchmark", GoTool: "go",
		ScaleUp: []scaleUp{{Mode: "webhook", Poll: 10 * time.Minute, Jobs: 2, Spacing: time.Second, JobRun: time.Second,
			Latencies: []time.Duration{300 * time.Millisecond, 500 * time.Millisecond}, Window: 4 * time.Second,
			Req: counts{Requests: 10, NotModified: 4, ByKind: map[string]int{"GET runs": 10}}, Budget: 6}},
		Idle: []idle{{Targets: 100, Poll: 30 * time.Second, Window: time.Minute, RSSStart: 40960, RSSEnd: 40960, RSSMax: 41984,
			CPU: 600 * time.Millisecond, Req: counts{Requests: 400, NotModified: 400, ByKind: map[string]int{}}}},
		Go: []goBench{{Args: []string{"test", "-run", "^$", "-bench", ".", "./journal/"},
			Output: "BenchmarkTransitionSynced-2 100 289171 ns/op\n"}},
		ScaleSet: &scaleSetRun{Jobs: 4, Spacing: time.Second, JobRun: time.Second, LongPoll: 50 * time.Second,
			Latencies: []time.Duration{60 * time.Millisecond, 80 * time.Millisecond, 90 * time.Millisecond, time.Second},
			Window:    8 * time.Second, Req: counts{ByKind: map[string]int{}}, Calls: map[string]int{"JIT": 4, "ack": 12},
			Idle: time.Hour / 60, IdleReq: counts{ByKind: map[string]int{}}, IdleCalls: map[string]int{"GET": 1},
			Chain: counts{Requests: 2, ByKind: map[string]int{"POST registration-token": 1, "POST runner-registration": 1}}},
	}
	var b bytes.Buffer
	r.render(&b)
	out := b.String()
	for _, want := range []string{
		"| date (UTC) | 2026-12-02 14:00:00 |", "| `nproc` | 2 |",
		"| webhook | 10m0s | 2 (every 1s, 1s each) | 0.30 s | 0.50 s | 0.50 s | 0 |",
		"| 400 | 400 | 0 | 240.0 | 0.0 |",                                  // idle: 400 requests/100 targets/min = 240/h, no budget
		"| 40.0 MiB | 40.0 MiB | 41.0 MiB | 0.60 s | 1.00 % |",             // RSS and CPU share
		"| one synced transition (one pebble batch, fsync) | 0.289 | ms |", // ns/op scaled to ms
		"`go test -run '^$' -bench . ./journal/`",
		"engine recovery on pebble, 1,000 live attempts, concluded | not measured",
		"| job queued -> running, p50 | at most 1 s | 0.08 s (p95 1.00 s, max 1.00 s, 4 jobs) |",
		"| REST requests per job | 0 | 0.00 (0 in 8s) |",
		"| 4.00 (ack 3.00, JIT 1.00) |",
		"| 0.0 (0 in 1m0s) |", "| 60.0 (GET 1 in 1m0s) |",
		"| 2 (POST registration-token 1, POST runner-registration 1, at start) |",
		"`go run ./bench/cmd/benchmark -only scaleset`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

func TestSpliceReplacesAndAppendsSectionsOnly(t *testing.T) {
	doc := "# Benchmarks\n\nold header\n\n## 1. A\n\na rows\n\n## 7. B\n\nold b\n```\n## not a heading\n```\n\n## C\n\nc rows\n\n## 9. E\n\ne rows\n"
	part := "# Benchmarks\n\nnew header\n\n## 2. F\n\nf rows\n\n## 8. B\n\nnew b\n\n## 10. D\n\nd rows\n"
	want := "# Benchmarks\n\nold header\n\n## 1. A\n\na rows\n\n## 2. F\n\n> measured apart\n\nf rows\n\n" +
		"## 8. B\n\n> measured apart\n\nnew b\n\n## C\n\nc rows\n\n## 9. E\n\ne rows\n\n## 10. D\n\n> measured apart\n\nd rows\n"
	if got := string(splice([]byte(doc), []byte(part), "measured apart")); got != want {
		t.Errorf("splice:\n%s\nwant:\n%s", got, want)
	}
	// A section ending without a blank line (</details>) still leaves one before the next heading.
	if got, want := string(splice([]byte("# B\n\n## 1. A\n\na\n\n## 2. C\n\nc\n"), []byte("## 1. A\n\nnew a\n</details>\n"), "n")),
		"# B\n\n## 1. A\n\n> n\n\nnew a\n</details>\n\n## 2. C\n\nc\n"; got != want {
		t.Errorf("splice:\n%q\nwant\n%q", got, want)
	}
	if got := string(splice([]byte(doc), []byte("# Benchmarks\n\nnothing run\n"), "x")); got != doc {
		t.Errorf("a run with no section changed the file:\n%s", got)
	}
}
