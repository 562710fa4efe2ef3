package metrics

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

const docsPath = "../../docs/metrics.md"

// TestDocsListEveryMetric keeps docs/metrics.md and the registry in step: every runner_manager_*
// family the daemon can export is in the reference table, and the table names nothing else.
func TestDocsListEveryMetric(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(runner_manager_[a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}

	families := gatherAll(t)
	exported := map[string]bool{}
	for _, f := range families {
		if name := f.GetName(); strings.HasPrefix(name, Namespace+"_") {
			exported[name] = true
			if !documented[name] {
				t.Errorf("%s is exported but not in the table of %s", name, docsPath)
			}
		}
	}
	for name := range documented {
		if !exported[name] {
			t.Errorf("%s is documented in %s but not exported", name, docsPath)
		}
	}
}

// gatherAll is every family a populated registry exports.
func gatherAll(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	m := New("test")
	populate(m)
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// populate touches every vector so each family has at least one series to gather.
func populate(m *Metrics) {
	m.SetRunners("web", map[string]int{"busy": 1})
	m.JobPickedUp("web")
	m.RunnerFailed("web", "registration_timed_out")
	m.LaunchRefused("web", "low_disk")
	m.ObserveScaleUp("web", StageQueuedToInProgress, time.Second)
	m.ObserveGitHubRequest(DefaultAccount, "GET /rate_limit", 200, time.Millisecond)
	m.SetRateLimitSource(func() map[string]map[string]RateLimit {
		return map[string]map[string]RateLimit{DefaultAccount: {"core": {Limit: 1, Remaining: 1, Reset: t0}}}
	})
	m.SetGovernorShareSource(func() map[string]int { return map[string]int{"default": 600} })
	m.SetGovernorUsedSource(func() map[string]int { return map[string]int{"default": 42} })
	m.FleetLeader("web", true)
	m.GitHubContact(DefaultAccount, t0)
	m.SetContactAccountSource(func() []string { return []string{DefaultAccount} })
	m.ObserveReconcile("web", time.Millisecond, os.ErrClosed) // any error counts
	m.ConfigReload(true, 1, t0)
	m.ObserveJournalWrite(time.Millisecond)
	m.WebhookDelivery("accepted")
	m.RunnerPackageDiscarded("modified")
	m.FleetJoined("ci", true)
	m.FleetTargetAlone("web", false)
	m.ScaleSet("set", true, 2, 1, 0)
	m.PollPlans(map[string]PollPlan{DefaultAccount: {Ceiling: 600, Need: 18, Stretch: 1}})
	m.SetTargetSource(func() []TargetGauges { return []TargetGauges{{Name: "web", MaxRunners: 2, Demand: 1}} })
}

// TestDocsAlertRulesAreValid runs the example alerts of docs/metrics.md through `promtool check rules`.
func TestDocsAlertRulesAreValid(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(groups:.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) != 1 {
		t.Fatalf("want exactly one ```yaml block starting with groups: in %s, found %d", docsPath, len(blocks))
	}
	rules := blocks[0][1]
	for _, name := range regexp.MustCompile(`runner_manager_[a-z_]+`).FindAllString(rules, -1) {
		base := strings.TrimSuffix(name, "_bucket")
		if !slices.Contains(ours, base) {
			t.Errorf("alert rules use %s, which this package does not export", name)
		}
	}
	promtool := needPromtool(t)
	file := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(file, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), promtool, "check", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules on the examples of %s: %v\n%s", docsPath, err, out)
	}
}

// needPromtool finds the promtool the metric tests lint with; `make tools` installs it for `make test`.
func needPromtool(t *testing.T) string {
	t.Helper()
	return livetest.Tool(t, "promtool", "run `make tools` (it installs the Debian package prometheus)")
}
