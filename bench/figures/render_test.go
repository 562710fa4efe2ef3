package figures

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRender draws every figure from a small recorded series and checks what a reader needs: the
// file is SVG, its axes are labelled, it names the command that measured its data, and it has
// a legend entry for every series.
func TestRender(t *testing.T) {
	dir := recorded(t)
	wrote, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(wrote) != len(all) {
		t.Errorf("wrote %v, want all %d figures", wrote, len(all))
	}
	webhook := "bin/benchmark -only webhook -update docs/benchmarks.md (2026-12-06 06:40 UTC)"
	idle := "bin/benchmark -only idle1,idle100 -poll 5s (2026-12-06 06:45 UTC)"
	for _, tc := range []struct {
		file      string
		want, not []string
	}{
		{LatencyFile, []string{latencyX, latencyY, webhook, "webhook (5 jobs)", "Scale-up latency distribution"}, []string{idle}},
		{RequestsFile, []string{requestsX, requestsY, webhook, idle, "webhook, 5 jobs every 1s (10 s bins)", "idle, 1 target (10 s bins)"}, nil},
		{RSSTargetsFile, []string{rssTargetsX, rssTargetsY, idle, "RSS max in the window"}, []string{webhook}},
		{RSSTimeFile, []string{rssTimeX, rssTimeY, idle, "1 idle target", "100 idle targets"}, []string{webhook}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			text := svgText(t, filepath.Join(dir, tc.file))
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("%s does not show %q; it shows:\n%s", tc.file, w, text)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(text, n) {
					t.Errorf("%s names %q, whose run feeds it nothing", tc.file, n)
				}
			}
		})
	}
}

// TestRenderOnlyWhatWasRecorded: a directory with latencies only gets the latency figure and
// the requests one, not RSS figures drawn from nothing.
func TestRenderOnlyWhatWasRecorded(t *testing.T) {
	dir := recorded(t, "idle1.json")
	wrote, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "bin/benchmark -only webhook -update docs/benchmarks.md (2026-12-06 06:40 UTC)"
	if len(wrote) != 2 || wrote[0].File != LatencyFile || wrote[1].File != RequestsFile ||
		strings.Join(wrote[0].Commands, ";") != want {
		t.Errorf("wrote %+v, want %s and %s, made by %q", wrote, LatencyFile, RequestsFile, want)
	}
	if _, err := os.Stat(filepath.Join(dir, RSSTimeFile)); err == nil {
		t.Errorf("%s was written with no RSS recorded", RSSTimeFile)
	}
}

func TestRenderErrors(t *testing.T) {
	empty := t.TempDir()
	if _, err := Render(empty); err == nil || !strings.Contains(err.Error(), "run make bench") {
		t.Errorf("empty directory: %v, want an error that says to run the benchmark", err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "x.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Render(bad); err == nil || !strings.Contains(err.Error(), "x.json") {
		t.Errorf("broken file: %v, want an error naming it", err)
	}
}

// TestWriteReplacesPart: a second run of a part replaces its file; other parts stay.
func TestWriteReplacesPart(t *testing.T) {
	dir := recorded(t, "webhook.json")
	for _, n := range []int{1, 2} {
		p := Part{Part: "webhook", Command: "c", Latency: []Latency{{Label: "webhook", Seconds: make([]float64, n)}}}
		if err := Write(dir, p); err != nil {
			t.Fatal(err)
		}
	}
	parts, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0].Part != "idle1" || parts[1].Part != "webhook" || len(parts[1].Latency[0].Seconds) != 2 {
		t.Errorf("read %+v, want idle1 kept and webhook's second run", parts)
	}
}

// svgText is every piece of text an SVG shows, unescaped ("->" is "-&gt;" in the file).
func svgText(t *testing.T, path string) string {
	t.Helper()
	svg, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s was not written: %v", filepath.Base(path), err)
	}
	var text strings.Builder
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	for tok, err := d.Token(); err != io.EOF; tok, err = d.Token() {
		if err != nil {
			t.Fatalf("%s is not well-formed SVG: %v", filepath.Base(path), err)
		}
		if c, ok := tok.(xml.CharData); ok {
			text.Write(append(c, '\n'))
		}
	}
	return text.String()
}

// recorded puts the recorded series of testdata (webhook.json: latencies and requests;
// idle1.json: requests and RSS) in a fresh directory, as a run leaves them, less those dropped.
func recorded(t *testing.T, drop ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "figures")
	if err := os.CopyFS(dir, os.DirFS("testdata")); err != nil {
		t.Fatal(err)
	}
	for _, n := range drop {
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRenderOneValue: one daemon at one target, one job: gonum widens a one-value axis by 1 either
// side, to 0 on a log scale, and panicked; the figures pad their log axes themselves.
func TestRenderOneValue(t *testing.T) {
	dir := t.TempDir()
	p := Part{Part: "idle1", Command: "c", Latency: []Latency{{Label: "webhook", Seconds: []float64{0.2}}},
		RSS: []RSS{{Label: "1 idle target", Targets: 1, KiB: []int{14000}, MaxKiB: 14000}}}
	if err := Write(dir, p); err != nil {
		t.Fatal(err)
	}
	wrote, err := Render(dir)
	if err != nil || len(wrote) != 3 {
		t.Fatalf("Render = %+v, %v; want latency, RSS against targets and RSS over time drawn", wrote, err)
	}
}
