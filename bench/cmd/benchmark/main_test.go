package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
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
	// 4 GETs at 1 point, a POST and a DELETE at 5; the second read of the runs URL was answered 304.
	if d.Points != 14 || d.Rereads != 1 || d.RereadsCharged != 0 {
		t.Errorf("points %d, re-reads %d (%d in full); want 14, 1 (0)", d.Points, d.Rereads, d.RereadsCharged)
	}
	c.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/repos/acme/r0001/actions/runs/5/jobs", nil))
	if d := c.snapshot().minus(before); d.Rereads != 2 || d.RereadsCharged != 1 {
		t.Errorf("a re-read answered in full: re-reads %d (%d in full); want 2 (1)", d.Rereads, d.RereadsCharged)
	}
	c.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/repos/acme/r0002/actions/runs", nil))
	if d := c.snapshot().minus(before); d.RereadRepos != 1 {
		t.Errorf("repositories re-read %d, want 1 (r0001 twice; r0002 read once)", d.RereadRepos)
	}
	c.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/repos/acme/r0002/actions/runs", nil))
	if d := c.snapshot().minus(before); d.RereadRepos != 2 {
		t.Errorf("repositories re-read %d, want 2", d.RereadRepos)
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
	if got := string(splice([]byte(doc), []byte(part), "measured apart", nil)); got != want {
		t.Errorf("splice:\n%s\nwant:\n%s", got, want)
	}
	// A section ending without a blank line (</details>) still leaves one before the next heading.
	if got, want := string(splice([]byte("# B\n\n## 1. A\n\na\n\n## 2. C\n\nc\n"), []byte("## 1. A\n\nnew a\n</details>\n"), "n", nil)),
		"# B\n\n## 1. A\n\n> n\n\nnew a\n</details>\n\n## 2. C\n\nc\n"; got != want {
		t.Errorf("splice:\n%q\nwant\n%q", got, want)
	}
	if got := string(splice([]byte(doc), []byte("# Benchmarks\n\nnothing run\n"), "x", nil)); got != doc {
		t.Errorf("a run with no section changed the file:\n%s", got)
	}
}

// TestRenderCostLimitsAndGoals: figures 10-12 write what was measured, each row with its command,
// and every goal says met or not met from those numbers (or that it was not measured).
func TestRenderCostLimitsAndGoals(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	r := results{
		Machine: machine{Date: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)}, Command: "bin/benchmark",
		Cost: []costRun{
			{costPart: costParts[0], Poll: 10 * time.Minute, Latency: costLatency, Jobs: 4, Spacing: 2 * time.Second, JobRun: time.Second,
				FirstPass: 1500 * time.Millisecond, Latencies: ms(300, 400, 500, 900), Window: 12 * time.Second,
				Req:    counts{Requests: 8, NotModified: 1, Points: 24, ByKind: map[string]int{"POST generate-jitconfig": 4, "DELETE runner": 4}},
				Budget: 6, PeakPoints: 40, PeakInFlight: 3, Limited: map[string]int{}},
			{costPart: costParts[1], Poll: 10 * time.Minute, Jobs: 2, Spacing: time.Second, JobRun: time.Second,
				Latencies: ms(2500, 2600), Window: 9 * time.Second, Req: counts{Requests: 10, Points: 30, ByKind: map[string]int{}},
				Budget: 5, PeakPoints: 700, Limited: map[string]int{"points": 2, "concurrent": 1}},
			{costPart: costParts[5], Poll: 30 * time.Second, Jobs: 1, Spacing: 2 * time.Second, JobRun: time.Second,
				Latencies: ms(40000), Req: counts{ByKind: map[string]int{}}, Limited: map[string]int{}},
		},
		Limits: []limitsRun{
			{limitsPart: limitsParts[0], Poll: 30 * time.Second, Window: 10 * time.Minute,
				Req:    counts{Requests: 5000, NotModified: 1200, Points: 5000, Rereads: 1200, ByKind: map[string]int{}},
				Budget: 3800, PeakPoints: 598, PeakInFlight: 8, Limited: map[string]int{},
				Stretch: "1001 targets need 7204 points/min at their poll intervals; the ceiling is 600: every interval is 16.7x longer"},
			{limitsPart: limitsParts[1], Poll: 30 * time.Second, Window: 5 * time.Minute, Req: counts{Requests: 2900, Points: 2900, ByKind: map[string]int{}},
				Budget: 2900, PeakPoints: 599, PeakInFlight: 8, Limited: map[string]int{}},
			{limitsPart: limitsParts[2], Poll: 30 * time.Second, Window: 47 * time.Minute,
				Req:    counts{Requests: 21000, NotModified: 6000, Points: 21000, Rereads: 6000, RereadRepos: 5000, ByKind: map[string]int{}},
				Budget: 15000, PeakPoints: 850, PeakInFlight: 2, Limited: map[string]int{}},
		},
	}
	var b bytes.Buffer
	r.render(&b)
	out := b.String()
	for _, want := range []string{
		"## 10. Cost per job, webhook mode: repository and organization targets at 100 ms round trips",
		"## 11. Cost per job, poll mode: repository and organization targets at 100 ms round trips",
		"| organization of 300 repositories | poll | 30s | 1 (every 2s, 1s each) | 0.00 s | 40.00 s |",
		// 4 jobs: 8 requests, 6 budget, 24 points
		"| repository | webhook | 10m0s | 4 (every 2s, 1s each) | 1.50 s | 0.40 s | 0.90 s | 12s | 2.0 | 1.5 | 6.0 | 1 | 40 | 3 | 0 | DELETE runner 4, POST generate-jitconfig 4 | `go run ./bench/cmd/benchmark -only cost-repo-webhook` |",
		"| organization of 100 repositories | webhook |", "| 3 (concurrent 1, points 2) |",
		"## 12. Secondary limits: 1,000 and 5,000 idle targets",
		"| 1000 repository targets + an organization of 300 repositories, idle | 10m0s | 5000 | 5000 | 1200 | 3800 | 1200 (0) | 598 | 8 | 0 | 1001 targets need 7204",
		"| 5000 repository targets, idle | 5m0s | 2900 | 2900 | 0 | 2900 | 0 (0) | 599 | 8 | 0 | not stretched | `go run ./bench/cmd/benchmark -only limits5000` |",
		"| webhook mode, repository target: at most 2 requests and 1.5 budget per job | 2.0 requests, 1.5 budget per job (4 jobs) | met |",
		"p50 2.50 s (2 of 2 jobs ran) | **not met** |",
		"| 0 403/429 answers in 10m0s; peak 598 points/min (ceiling 600, GitHub's limit 900) | met |",
		"| 5000 repository targets, idle, governor ceiling 900, a token of 20000 budget/h, until every repository was read again | 47m0s | 21000 |",
		"| 0 budget/h idle up to 5,000 targets | 0 of 6000 re-reads answered in full (every one of 5000 repositories read again) in 47m0s, 0 403/429 answers | met | `go run ./bench/cmd/benchmark -only idle5000` |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "1% of a core") {
		t.Error("the idle goal is shown without the idle figure")
	}
	if poll := out[strings.Index(out, "## 11."):strings.Index(out, "## 12.")]; strings.Contains(poll, "Goals of issue 16") {
		t.Error("figure 11 measures no goal but shows a goals table")
	}
	// A goal measured over too short a window is not met, whatever its counts.
	r.Limits[0].Window = 5 * time.Minute
	r.Idle = []idle{{Targets: 1000, Window: time.Minute, RSSMax: 60 * 1024, CPU: 300 * time.Millisecond}}
	// Nor is the budget goal when some repository was never read again, or one re-read was charged.
	r.Limits[2].Req.RereadRepos = 4999
	b.Reset()
	r.render(&b)
	for _, want := range []string{
		"| 0 403/429 answers in 5m0s; peak 598 points/min (ceiling 600, GitHub's limit 900) | **not met** |",
		"| 0 budget/h idle up to 5,000 targets | not measured: in 47m0s 4999 of 5000 repositories were read again (poll plan: not stretched) | not measured |",
		"| RSS max 60.0 MiB, 0.50 % of a core over 1m0s | **not met** |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

func TestStretchLoggedTakesTheLastPlan(t *testing.T) {
	path := t.TempDir() + "/daemon.log"
	log := `{"level":"INFO","msg":"daemon running"}
{"level":"WARN","msg":"GitHub request governor: poll intervals stretched","detail":"first"}
not json
{"level":"WARN","msg":"GitHub request governor: poll intervals stretched","detail":"1000 targets need 6000 points/min"}
`
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := stretchLogged(path); err != nil || got != "1000 targets need 6000 points/min" {
		t.Errorf("stretchLogged = %q, %v", got, err)
	}
}

// TestSpliceKeepsRowsOfPartsNotRun: a run of one part replaces that part's rows in a section
// and keeps the other parts' rows (data rows, and goal rows the run could only say "not run"
// of), with the notes of the runs that measured them; a Go benchmark's row is known by its
// `go test` arguments.
func TestSpliceKeepsRowsOfPartsNotRun(t *testing.T) {
	cmd := func(part string) string { return "`go run ./bench/cmd/benchmark -only " + part + "`" }
	doc := "# B\n\n## 12. L\n\n> Measured apart from the rest of this file: `bin/benchmark -only limits1000,limits5000 -update f` (old).\n\n" +
		"text\n\n| situation | n | command |\n|---|---|---|\n| 1000 | 1 | " + cmd("limits1000") + " |\n| 5000 | 2 | " + cmd("limits5000") + " |\n\n" +
		"| goal | met | command |\n|---|---|---|\n| g1000 | no | " + cmd("limits1000") + " |\n| g5000 | yes | " + cmd("limits5000") + " |\n\n" +
		"## 6. J\n\n| figure | value | command |\n|---|---|---|\n" +
		"| transition | 1 | `go test -run '^$' -bench . -benchtime 1s -count 1 ./journal/` |\n" +
		"| recovery | 2 | `go test -run '^$' -bench '^BenchmarkRecovery' -benchtime 1x -count 1 ./bench/` |\n"
	part := "# B\n\n## 12. L\n\nnew text\n\n| situation | n | command |\n|---|---|---|\n| 1000 | 9 | " + cmd("limits1000") + " |\n\n" +
		"| goal | met | command |\n|---|---|---|\n| g1000 | yes | " + cmd("limits1000") + " |\n| g5000 | not run | " + cmd("limits5000") + " |\n\n" +
		"## 6. J\n\n| figure | value | command |\n|---|---|---|\n" +
		"| transition | 7 | `go test -run '^$' -bench . -benchtime 1s -count 1 ./journal/` |\n"
	got := string(splice([]byte(doc), []byte(part), "new note", map[string]bool{"limits1000": true, "journal": true}))
	want := "# B\n\n## 12. L\n\n> new note\n\n> Measured apart from the rest of this file: `bin/benchmark -only limits1000,limits5000 -update f` (old).\n\n" +
		"new text\n\n| situation | n | command |\n|---|---|---|\n| 1000 | 9 | " + cmd("limits1000") + " |\n| 5000 | 2 | " + cmd("limits5000") + " |\n\n" +
		"| goal | met | command |\n|---|---|---|\n| g1000 | yes | " + cmd("limits1000") + " |\n| g5000 | yes | " + cmd("limits5000") + " |\n\n" +
		"## 6. J\n\n> new note\n\n| figure | value | command |\n|---|---|---|\n" +
		"| transition | 7 | `go test -run '^$' -bench . -benchtime 1s -count 1 ./journal/` |\n" +
		"| recovery | 2 | `go test -run '^$' -bench '^BenchmarkRecovery' -benchtime 1x -count 1 ./bench/` |\n"
	if got != want {
		t.Errorf("splice:\n%s\nwant:\n%s", got, want)
	}
	// Every part of the section ran: nothing old is kept, nor the old note.
	got = string(splice([]byte(doc), []byte(part), "new note", map[string]bool{"limits1000": true, "limits5000": true, "journal": true, "recovery": true}))
	if strings.Contains(got, "| 5000 | 2 |") || strings.Contains(got, "(old)") || strings.Contains(got, "| recovery |") {
		t.Errorf("rows or notes of parts that ran were kept:\n%s", got)
	}
}

// TestMemoryGoal: figure 13 compares the RSS at minute 10 with the end (within 5%) and the peak
// with 50 MiB; a run cut short before its last mark is not measured.
func TestMemoryGoal(t *testing.T) {
	run := func(max int, kib ...int) memoryRun {
		m := memoryRun{Targets: 1000, Poll: 30 * time.Second, Window: 30 * time.Minute, Every: 5 * time.Minute, RSSMax: max}
		for _, k := range kib {
			m.Marks = append(m.Marks, usage{RSSKiB: k})
		}
		return m
	}
	for _, tc := range []struct {
		name string
		m    memoryRun
		want string
	}{
		{"flat and small", run(45*1024, 40000, 44000, 44500, 45000, 45500, 46000), "| +4.5 % | met |"},
		{"still growing", run(49*1024, 40000, 40000, 42000, 44000, 46000, 50000), "| +25.0 % | **not met** |"},
		{"flat but over 50 MiB", run(70*1024, 60000, 70000, 70000, 70000, 70000, 70000), "| +0.0 % | **not met** |"},
		{"cut short", run(45*1024, 40000, 44000), "| not measured (the run ended before its last mark) | not measured |"},
	} {
		var b strings.Builder
		results{Memory: []memoryRun{tc.m}}.renderMemory(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%s: figure 13 lacks %q:\n%s", tc.name, tc.want, b.String())
		}
	}
}

// TestKindOf pins the request breakdown's names: a runner's DELETE by its method, the rest by how
// their paths end, the registration token before the runner list it also ends under.
func TestKindOf(t *testing.T) {
	for _, tc := range []struct{ method, path, want string }{
		{http.MethodPost, "/repos/acme/a/actions/runners/registration-token", "POST registration-token"},
		{http.MethodPost, "/actions/runner-registration", "POST runner-registration"},
		{http.MethodPost, "/orgs/acme/actions/runners/generate-jitconfig", "POST generate-jitconfig"},
		{http.MethodGet, "/repos/acme/a/actions/runners/downloads", "GET runners/downloads"},
		{http.MethodDelete, "/repos/acme/a/actions/runners/42", "DELETE runner"},
		{http.MethodGet, "/repos/acme/a/actions/runners", "GET runners"},
		{http.MethodGet, "/repos/acme/a/actions/runs", "GET runs"},
		{http.MethodGet, "/repos/acme/a/actions/runs/7/jobs", "GET run jobs"},
		{http.MethodGet, "/orgs/acme/repos", "GET repos"},
		{http.MethodGet, "/installation/repositories", "GET repos"},
		{http.MethodPatch, "/repos/acme/a", "PATCH other"},
	} {
		if got := kindOf(httptest.NewRequest(tc.method, tc.path, nil)); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}
