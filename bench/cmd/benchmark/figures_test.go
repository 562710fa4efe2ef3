package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/bench/figures"
)

// TestRecordFiguresFromARun: what a run measured is recorded per part in the figures directory
// (latencies, requests in each second, RSS every second), every figure is drawn from it, and the
// markdown links each figure beside its table and says which run drew it.
func TestRecordFiguresFromARun(t *testing.T) {
	r := results{
		Machine: machine{Date: time.Date(2026, 12, 6, 6, 40, 0, 0, time.UTC)},
		Command: "bin/benchmark -only webhook,idle1,idle1000-30m",
		ScaleUp: []scaleUp{{Mode: "webhook", Jobs: 2, Spacing: time.Second,
			Latencies: []time.Duration{300 * time.Millisecond, 500 * time.Millisecond}, PerSecond: []int{3, 1, 0, 4}}},
		Idle: []idle{{Targets: 1, Poll: 30 * time.Second, Window: time.Minute, RSSMax: 15000,
			RSSSeries: []int{14000, 15000}, PerSecond: []int{0, 2}, Req: counts{ByKind: map[string]int{}}}},
		Memory: []memoryRun{{Targets: 1000, Window: 30 * time.Minute, Every: 5 * time.Minute, RSSMax: 40000,
			RSSSeries: []int{39000, 40000}, PerSecond: []int{5, 5}}},
	}
	dir := filepath.Join(t.TempDir(), "figures")
	drawn, err := recordFigures(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"webhook.json", "idle1.json", "idle1000-30m.json", figures.LatencyFile, figures.RequestsFile, figures.RSSTargetsFile, figures.RSSTimeFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the run left no %s: %v", f, err)
		}
	}
	parts, err := figures.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]figures.Part{}
	for _, p := range parts {
		byName[p.Part] = p
	}
	if got := byName["webhook"].Latency; len(got) != 1 || got[0].Label != "webhook" || got[0].Seconds[1] != 0.5 {
		t.Errorf("webhook latencies recorded as %+v", got)
	}
	if got := byName["idle1"].RSS; len(got) != 1 || got[0].Targets != 1 || len(got[0].KiB) != 2 || got[0].MaxKiB != 15000 {
		t.Errorf("idle1 RSS recorded as %+v", got)
	}
	if got := byName["idle1000-30m"].Requests; len(got) != 1 || len(got[0].PerSecond) != 2 || got[0].PerSecond[1] != 5 {
		t.Errorf("idle1000-30m requests recorded as %+v", got)
	}
	r.Figures = drawn
	var b bytes.Buffer
	r.render(&b)
	out := b.String()
	for _, want := range []string{
		"## 1. Scale-up latency", "![", "(figures/latency.svg)", "(figures/requests.svg)", "(figures/rss-targets.svg)", "(figures/rss-time.svg)",
		"## Figures", "- [latency.svg](figures/latency.svg), drawn from: `bin/benchmark -only webhook,idle1,idle1000-30m (2026-12-06 06:40 UTC)`",
		"make plots",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the markdown lacks %q", want)
		}
	}
	// Beside its table: the latency figure comes in section 1, before section 2 begins.
	if s1, s2, fig := strings.Index(out, "## 1."), strings.Index(out, "## 2."), strings.Index(out, "(figures/latency.svg)"); fig < s1 || fig > s2 {
		t.Errorf("the latency figure is not in section 1 (at %d, section 1 at %d, section 2 at %d)", fig, s1, s2)
	}
}

// TestPlotsOnlyRedrawsFromRecordedSeries: -plots-only measures nothing and draws from what a run
// recorded (here the figures package's testdata), and says what to do when nothing was recorded.
func TestPlotsOnlyRedrawsFromRecordedSeries(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "figures", "testdata"))); err != nil {
		t.Fatal(err)
	}
	if err := run(options{plotsOnly: true, figures: dir, out: "-"}, []string{"benchmark", "-plots-only"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{figures.LatencyFile, figures.RequestsFile, figures.RSSTargetsFile, figures.RSSTimeFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("-plots-only did not draw %s: %v", f, err)
		}
	}
	doc := filepath.Join(t.TempDir(), "benchmarks.md")
	old := "# Benchmarks\n\n## 1. Scale-up latency: job queued -> job in progress\n\nkept\n\n## Figures\n\n- [old.svg](figures/old.svg), drawn from: `stale`\n"
	if err := os.WriteFile(doc, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(options{plotsOnly: true, figures: dir, update: doc, out: "-"}, []string{"benchmark", "-plots-only"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kept", "Redrawn without measuring: `bin/benchmark -plots-only`",
		"- [rss-time.svg](figures/rss-time.svg), drawn from: `bin/benchmark -only idle1,idle100 -poll 5s (2026-12-06 06:45 UTC)`"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("-plots-only -update left no %q in:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "stale") {
		t.Errorf("-plots-only -update kept the old Figures section:\n%s", b)
	}
	if err := run(options{plotsOnly: true, out: "-"}, nil); err == nil || !strings.Contains(err.Error(), "-figures") {
		t.Errorf("-plots-only without a directory: %v, want an error naming -figures", err)
	}
	if err := run(options{plotsOnly: true, figures: t.TempDir()}, nil); err == nil || !strings.Contains(err.Error(), "make bench") {
		t.Errorf("-plots-only on an empty directory: %v, want an error that says to run the benchmark", err)
	}
}

// TestRecordFiguresNothingMeasured: a run of parts that feed no figure (-only journal) records
// nothing and draws nothing, and does not fail for want of recorded series.
func TestRecordFiguresNothingMeasured(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "figures")
	drawn, err := recordFigures(dir, results{Command: "bin/benchmark -only journal"})
	if err != nil || len(drawn) != 0 {
		t.Errorf("recordFigures = %v, %v; want nothing drawn and no error", drawn, err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("a run that measured no series made %s", dir)
	}
}

func TestFiguresDir(t *testing.T) {
	for _, tc := range []struct {
		o    options
		want string
	}{
		{options{out: "docs/benchmarks.md"}, "docs/figures"},
		{options{out: "-", update: "docs/benchmarks.md"}, "docs/figures"},
		{options{out: "docs/benchmarks.md", figures: "/tmp/f"}, "/tmp/f"},
		{options{out: "-"}, ""},
	} {
		if got := figuresDir(tc.o); got != tc.want {
			t.Errorf("figuresDir(%+v) = %q, want %q", tc.o, got, tc.want)
		}
	}
}
