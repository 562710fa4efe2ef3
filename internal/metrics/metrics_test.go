package metrics

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/runner-manager/runner-manager/internal/golden"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// ours lists every metric this package defines except build_info, whose goversion label
// depends on the toolchain (TestBuildInfo checks it).
var ours = []string{
	"runner_manager_runners", "runner_manager_jobs_picked_up_total",
	"runner_manager_scale_up_latency_seconds", "runner_manager_github_requests_total",
	"runner_manager_github_request_duration_seconds", "runner_manager_github_rate_limit_remaining", "runner_manager_github_rate_limit_requests",
	"runner_manager_github_rate_limit_reset_timestamp_seconds", "runner_manager_reconcile_duration_seconds",
	"runner_manager_reconcile_errors_total", "runner_manager_config_reloads_total",
	"runner_manager_config_last_reload_successful", "runner_manager_config_last_reload_success_timestamp_seconds",
	"runner_manager_config_generation", "runner_manager_journal_write_duration_seconds",
	"runner_manager_github_last_successful_contact_timestamp_seconds", "runner_manager_webhook_deliveries_total",
	"runner_manager_runner_package_discards_total",
	"runner_manager_target_demand", "runner_manager_target_max_runners", "runner_manager_target_last_github_contact_timestamp_seconds",
	"runner_manager_github_poll_stretch", "runner_manager_github_poll_need_points_per_minute", "runner_manager_github_points_per_minute_ceiling",
}

var t0 = time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)

// TestGolden drives every method the way a short daemon life would and compares the whole
// exposition of our metrics with testdata/metrics.golden.prom.
func TestGolden(t *testing.T) {
	m := New("1.2.3")
	m.ConfigReload(true, 1, t0)
	m.ConfigReload(false, 0, t0.Add(time.Minute)) // rejected: generation and success time stay
	m.SetRunners("web", map[string]int{"busy": 2, "started": 1})
	m.SetRunners("infra", map[string]int{"started": 1})
	m.JobPickedUp("web")
	m.JobPickedUp("web")
	m.ObserveScaleUp("web", StageQueuedToStarted, 4*time.Second)
	m.ObserveScaleUp("web", StageStartedToInProgress, 2*time.Second)
	m.ObserveScaleUp("web", StageQueuedToInProgress, 6*time.Second)
	m.ObserveGitHubRequest(DefaultAccount, "GET /repos/{owner}/{repo}/actions/runs", 200, 80*time.Millisecond)
	m.ObserveGitHubRequest(DefaultAccount, "GET /repos/{owner}/{repo}/actions/runs", 304, 20*time.Millisecond)
	m.ObserveGitHubRequest(DefaultAccount, "POST /repos/{owner}/{repo}/actions/runners/generate-jitconfig", 403, 50*time.Millisecond)
	m.ObserveGitHubRequest(DefaultAccount, "GET /orgs/{org}/actions/runners", 0, 3*time.Second)
	m.SetRateLimitSource(func() map[string]map[string]RateLimit {
		return map[string]map[string]RateLimit{DefaultAccount: {"core": {Limit: 5000, Remaining: 4990, Reset: t0.Add(time.Hour)}, "search": {Limit: 30, Remaining: 30, Reset: t0.Add(time.Minute)}}}
	})
	m.RestoreGitHubContact(func(string) time.Time { return t0 }) // the journal's: globex shows it until its own first answer
	m.GitHubContact(DefaultAccount, t0.Add(3*time.Second))
	m.SetContactAccountSource(func() []string { return []string{DefaultAccount, "globex"} })
	m.ObserveReconcile("web", 120*time.Millisecond, nil)
	m.ObserveReconcile("infra", 2*time.Second, errors.New("rate limited"))
	m.ObserveJournalWrite(3 * time.Millisecond)
	m.WebhookDelivery("accepted")
	m.WebhookDelivery("bad_signature")
	m.InitRunnerPackageDiscards([]string{"modified", "unrecorded"})
	m.RunnerPackageDiscarded("unrecorded")
	m.ObserveGitHubRequest("globex", "GET /repos/{owner}/{repo}/actions/runs", 200, 30*time.Millisecond)
	m.PollPlans(map[string]PollPlan{DefaultAccount: {Ceiling: 600, Need: 6000, Stretch: 13.9}, "globex": {Ceiling: 300, Need: 18, Stretch: 1}})

	got, err := testutil.GatherAndFormat(m.Registry(), expfmt.TypeTextPlain, ours...)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "metrics.golden.prom"), got, *update)
}

func TestSetRunnersDropsVanishedStatesToZero(t *testing.T) {
	m := New("test")
	m.SetRunners("web", map[string]int{"busy": 3, "started": 1})
	m.SetRunners("web", map[string]int{"started": 2})
	for _, tc := range []struct {
		state string
		want  float64
	}{{"busy", 0}, {"started", 2}} {
		if got := testutil.ToFloat64(m.runners.WithLabelValues("web", tc.state)); got != tc.want {
			t.Errorf("runners{web,%s} = %v, want %v", tc.state, got, tc.want)
		}
	}
}

func TestForgetTargetRemovesItsSeries(t *testing.T) {
	m := New("test")
	m.SetRunners("web", map[string]int{"busy": 1})
	m.SetRunners("infra", map[string]int{"busy": 1})
	m.JobPickedUp("web")
	m.ObserveReconcile("web", time.Second, errors.New("x"))
	m.ObserveScaleUp("web", StageQueuedToStarted, time.Second)
	m.ForgetTarget("web")
	if n := testutil.CollectAndCount(m.runners); n != 1 {
		t.Errorf("runner series after forgetting web = %d, want 1 (infra's)", n)
	}
	for name, c := range map[string]int{
		"jobs": testutil.CollectAndCount(m.jobsPickedUp), "reconcile": testutil.CollectAndCount(m.reconcileSeconds),
		"errors": testutil.CollectAndCount(m.reconcileErrors), "latency": testutil.CollectAndCount(m.scaleUpLatency),
	} {
		if c != 0 {
			t.Errorf("%s series after forgetting web = %d, want 0", name, c)
		}
	}
	// A target re-added later starts from nothing, with no stale state set to 0.
	m.SetRunners("web", map[string]int{"started": 1})
	if n := testutil.CollectAndCount(m.runners); n != 2 {
		t.Errorf("runner series after re-adding web = %d, want 2", n)
	}
}

// TestRateLimitsAreReadAtScrapeTime: the gauges follow the source between scrapes, with no push.
func TestRateLimitsAreReadAtScrapeTime(t *testing.T) {
	m := New("test")
	count := func() int { return testutil.CollectAndCount(m.rates) }
	if n := count(); n != 0 {
		t.Fatalf("%d rate series with no source, want 0", n)
	}
	remaining := 100
	m.SetRateLimitSource(func() map[string]map[string]RateLimit {
		return map[string]map[string]RateLimit{DefaultAccount: {"core": {Limit: 5000, Remaining: remaining, Reset: t0}}}
	})
	want := func(v int) string {
		return fmt.Sprintf("# HELP runner_manager_github_rate_limit_remaining Requests left in the current GitHub rate-limit window (x-ratelimit-remaining), by account and resource.\n"+
			"# TYPE runner_manager_github_rate_limit_remaining gauge\nrunner_manager_github_rate_limit_remaining{account=\"default\",resource=\"core\"} %d\n", v)
	}
	for _, v := range []int{100, 42} {
		remaining = v
		if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want(v)), "runner_manager_github_rate_limit_remaining"); err != nil {
			t.Errorf("remaining %d: %v", v, err)
		}
	}
	if n := count(); n != 3 {
		t.Errorf("%d rate series for one resource, want 3 (limit, remaining, reset)", n)
	}
	m.SetRateLimitSource(nil)
	if n := count(); n != 0 {
		t.Errorf("%d rate series after removing the source, want 0", n)
	}
}

// TestGovernorShareIsReadAtScrapeTime: the share gauge follows its source (a fleet host's share
// moves as the others spend), and is absent without one.
func TestGovernorShareIsReadAtScrapeTime(t *testing.T) {
	m := New("test")
	if n := testutil.CollectAndCount(m.share); n != 0 {
		t.Fatalf("%d share series with no source, want 0", n)
	}
	share := 600
	m.SetGovernorShareSource(func() map[string]int { return map[string]int{"default": share, "ghes": 120} })
	for _, v := range []int{600, 230} {
		share = v
		want := fmt.Sprintf("# HELP runner_manager_github_points_share_per_minute Secondary-limit points a minute this host's request governor of the account may spend now: the whole ceiling (points_per_minute) alone or when not joined, its share of it while joined to a fleet.\n"+
			"# TYPE runner_manager_github_points_share_per_minute gauge\nrunner_manager_github_points_share_per_minute{account=\"default\"} %d\nrunner_manager_github_points_share_per_minute{account=\"ghes\"} 120\n", v)
		if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "runner_manager_github_points_share_per_minute"); err != nil {
			t.Errorf("share %d: %v", v, err)
		}
	}
	m.SetGovernorShareSource(nil)
	if n := testutil.CollectAndCount(m.share); n != 0 {
		t.Errorf("%d share series after removing the source, want 0", n)
	}
}

func TestConfigReloadFailureKeepsLastGood(t *testing.T) {
	m := New("test")
	m.ConfigReload(true, 7, t0)
	m.ConfigReload(false, 8, t0.Add(time.Hour))
	for name, tc := range map[string]struct{ got, want float64 }{
		"successful": {testutil.ToFloat64(m.reloadOK), 0},
		"success_ts": {testutil.ToFloat64(m.reloadSuccessTS), unixSeconds(t0)},
		"generation": {testutil.ToFloat64(m.configGeneration), 7},
		"failures":   {testutil.ToFloat64(m.reloads.WithLabelValues(ReloadFailure)), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", name, tc.got, tc.want)
		}
	}
	m.ConfigReload(true, 9, t0.Add(2*time.Hour))
	if got := testutil.ToFloat64(m.reloadOK); got != 1 {
		t.Errorf("successful after a good reload = %v, want 1", got)
	}
}

func TestNegativeScaleUpIsZero(t *testing.T) {
	m := New("test")
	m.ObserveScaleUp("web", StageQueuedToStarted, -5*time.Second)
	out, err := testutil.GatherAndFormat(m.Registry(), expfmt.TypeTextPlain, "runner_manager_scale_up_latency_seconds")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `runner_manager_scale_up_latency_seconds_sum{stage="queued_to_started",target="web"} 0`) {
		t.Errorf("negative duration not clamped to 0:\n%s", out)
	}
}

func TestBuildInfo(t *testing.T) {
	out, err := testutil.GatherAndFormat(New("1.2.3").Registry(), expfmt.TypeTextPlain, "runner_manager_build_info")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `version="1.2.3"} 1`) || !strings.Contains(string(out), `goversion="go`) {
		t.Errorf("build_info:\n%s", out)
	}
}

// TestPollPlansPerAccount: the [github] account's poll-plan series exist from the start (stretch
// 1), each account planned gets its own, and an account a reload removed loses them.
func TestPollPlansPerAccount(t *testing.T) {
	m := New("test")
	if got := testutil.ToFloat64(m.pollStretch.WithLabelValues(DefaultAccount)); got != 1 || testutil.CollectAndCount(m.pollStretch) != 1 {
		t.Fatalf("before any plan: stretch{default} = %v in %d series, want 1 in 1", got, testutil.CollectAndCount(m.pollStretch))
	}
	m.PollPlans(map[string]PollPlan{DefaultAccount: {Ceiling: 600, Need: 10, Stretch: 1}, "globex": {Ceiling: 300, Need: 600, Stretch: 2.5}})
	if got := testutil.ToFloat64(m.pollStretch.WithLabelValues("globex")); got != 2.5 {
		t.Errorf("stretch{globex} = %v, want 2.5", got)
	}
	m.PollPlans(map[string]PollPlan{DefaultAccount: {Ceiling: 600, Need: 10, Stretch: 1}})
	for name, v := range map[string]*prometheus.GaugeVec{"stretch": m.pollStretch, "need": m.pollNeed, "ceiling": m.pointsCeiling} {
		if n := testutil.CollectAndCount(v); n != 1 {
			t.Errorf("%s series after globex was removed = %d, want 1 (default's)", name, n)
		}
	}
}
