package daemon

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/tabwriter"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/runner-manager/runner-manager/internal/golden"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// scrape fetches the daemon's metrics endpoint once, lints it with `promtool check metrics` and
// returns the parsed families.
func (e *env) scrape() map[string]*dto.MetricFamily {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), http.MethodGet, "http://"+e.metricsAddr+"/metrics", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		e.t.Fatalf("scrape: HTTP %d, %v\n%s", resp.StatusCode, err, body)
	}
	promtool := livetest.Tool(e.t, "promtool", "run `make tools` (it installs the Debian package prometheus)")
	cmd := exec.CommandContext(e.t.Context(), promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Errorf("promtool check metrics on a live scrape: %v\n%s", err, out)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		e.t.Fatalf("parse the scrape: %v\n%s", err, body)
	}
	return fams
}

// sample returns the value of the series of family name whose labels include want: a counter's or
// gauge's value, a histogram's sample count. Several matches are summed; ok is false for none.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) (v float64, ok bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		for k, val := range want {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == val {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		ok = true
		switch {
		case m.Counter != nil:
			v += m.GetCounter().GetValue()
		case m.Gauge != nil:
			v += m.GetGauge().GetValue()
		case m.Histogram != nil:
			v += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return v, ok
}

// statusCLI runs the built `runner-manager status` with args and returns its stdout.
func (e *env) statusCLI(args ...string) string {
	e.t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(e.t.Context(), binary, append([]string{"status"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("runner-manager status %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

var (
	reAge       = regexp.MustCompile(`\b(\d+[dhm])?\d+[smhd]\b`)
	rePID       = regexp.MustCompile(`\bpid \d+\b`)
	reCell      = regexp.MustCompile(` {2,}`)
	reIsolation = regexp.MustCompile(`(?m)^isolation:  .*$`)
)

// normalize makes status output comparable across runs: the temp dir, host id, pids, ages and
// the version become placeholders, and the tables are re-aligned, since their padding followed
// the width of the ages replaced.
func (e *env) normalize(out, host, version string) string {
	out = strings.ReplaceAll(out, e.dir, "$TMP")
	out = strings.ReplaceAll(out, host, "HOST")
	out = strings.Replace(out, "runner-manager "+version+",", "runner-manager VERSION,", 1)
	out = rePID.ReplaceAllString(out, "pid PID")
	out = reAge.ReplaceAllString(out, "AGE")
	out = reIsolation.ReplaceAllString(out, "isolation:  ISOLATION") // the host's cgroups, or why none
	var b strings.Builder
	var tw *tabwriter.Writer
	for line := range strings.Lines(out) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "TARGET  ") || strings.HasPrefix(line, "AGO  ") {
			tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0) // as internal/status renders tables
		}
		if tw != nil && line == "" {
			_ = tw.Flush()
			tw = nil
		}
		if tw != nil {
			fmt.Fprintln(tw, reCell.ReplaceAllString(line, "\t"))
			continue
		}
		fmt.Fprintln(&b, line)
	}
	if tw != nil {
		_ = tw.Flush()
	}
	return b.String()
}

// checkGolden compares got with testdata/name; -update rewrites it.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), []byte(got), *update)
}
