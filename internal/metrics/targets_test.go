package metrics

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Every per-target series exists at 0 from the start, so `increase(...[10m]) > 0` fires on the
// first error and absent() never mistakes a quiet target for a missing one; the target gauges
// follow the source; a forgotten target leaves nothing behind.
func TestTargetsStartAtZero(t *testing.T) {
	m := New("1.2.3")
	m.InitTargets([]string{"web"})
	m.RunnerFailed("web", "launch_failed")
	m.InitTargets([]string{"web", "infra"}) // a reload adding infra keeps web's counts
	targets := []TargetGauges{{Name: "web", MaxRunners: 4, Demand: 3}, {Name: "infra", MaxRunners: 1}}
	m.SetTargetSource(func() []TargetGauges { return targets })
	m.TargetContact("web", t0)
	m.TargetContact("web", t0.Add(-time.Minute)) // an older answer arriving late never moves it back

	want := `
# HELP runner_manager_reconcile_errors_total Reconcile passes that ended in an error, by target.
# TYPE runner_manager_reconcile_errors_total counter
runner_manager_reconcile_errors_total{target="infra"} 0
runner_manager_reconcile_errors_total{target="web"} 0
# HELP runner_manager_runner_failures_total Runners this host gave up on, by target and reason (registration_timed_out: never came online within startup_timeout; launch_failed; out_of_memory: its job went past memory_max; max_job_duration: busy too long, stopped; ghost: alive after GitHub forgot it, stopped; image_missing, container_runtime_unavailable, runner_dependency_missing: a container runner's image, Docker Engine or runner dependencies).
# TYPE runner_manager_runner_failures_total counter
runner_manager_runner_failures_total{reason="container_runtime_unavailable",target="infra"} 0
runner_manager_runner_failures_total{reason="container_runtime_unavailable",target="web"} 0
runner_manager_runner_failures_total{reason="ghost",target="infra"} 0
runner_manager_runner_failures_total{reason="ghost",target="web"} 0
runner_manager_runner_failures_total{reason="image_missing",target="infra"} 0
runner_manager_runner_failures_total{reason="image_missing",target="web"} 0
runner_manager_runner_failures_total{reason="launch_failed",target="infra"} 0
runner_manager_runner_failures_total{reason="launch_failed",target="web"} 1
runner_manager_runner_failures_total{reason="max_job_duration",target="infra"} 0
runner_manager_runner_failures_total{reason="max_job_duration",target="web"} 0
runner_manager_runner_failures_total{reason="out_of_memory",target="infra"} 0
runner_manager_runner_failures_total{reason="out_of_memory",target="web"} 0
runner_manager_runner_failures_total{reason="registration_timed_out",target="infra"} 0
runner_manager_runner_failures_total{reason="registration_timed_out",target="web"} 0
runner_manager_runner_failures_total{reason="runner_dependency_missing",target="infra"} 0
runner_manager_runner_failures_total{reason="runner_dependency_missing",target="web"} 0
# HELP runner_manager_launches_refused_total Passes of a target that wanted runners and launched none for a host condition, by target and reason (low_disk: less than min_free_disk free).
# TYPE runner_manager_launches_refused_total counter
runner_manager_launches_refused_total{reason="low_disk",target="infra"} 0
runner_manager_launches_refused_total{reason="low_disk",target="web"} 0
# HELP runner_manager_jobs_picked_up_total Workflow jobs that a runner started by this host picked up, by target.
# TYPE runner_manager_jobs_picked_up_total counter
runner_manager_jobs_picked_up_total{target="infra"} 0
runner_manager_jobs_picked_up_total{target="web"} 0
# HELP runner_manager_target_demand Jobs waiting for the target's runners at its latest pass (0 before the first).
# TYPE runner_manager_target_demand gauge
runner_manager_target_demand{target="infra"} 0
runner_manager_target_demand{target="web"} 3
# HELP runner_manager_target_max_runners The target's max_runners: the most runners it may have at once.
# TYPE runner_manager_target_max_runners gauge
runner_manager_target_max_runners{target="infra"} 1
runner_manager_target_max_runners{target="web"} 4
# HELP runner_manager_target_last_github_contact_timestamp_seconds When GitHub last answered a call made for the target successfully (Unix time; 0: not yet since the daemon started).
# TYPE runner_manager_target_last_github_contact_timestamp_seconds gauge
runner_manager_target_last_github_contact_timestamp_seconds{target="infra"} 0
runner_manager_target_last_github_contact_timestamp_seconds{target="web"} 1.79622e+09
`
	names := []string{"runner_manager_reconcile_errors_total", "runner_manager_runner_failures_total", "runner_manager_launches_refused_total", "runner_manager_jobs_picked_up_total",
		"runner_manager_target_demand", "runner_manager_target_max_runners", "runner_manager_target_last_github_contact_timestamp_seconds"}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	// Runner states and histograms exist too: 7 states and 2 histograms (1 + 3 stages) per target.
	for name, per := range map[string]int{"runner_manager_runners": len(RunnerStates), "runner_manager_reconcile_duration_seconds": 1, "runner_manager_scale_up_latency_seconds": 3} {
		if n, err := testutil.GatherAndCount(m.Registry(), name); err != nil || n != 2*per {
			t.Errorf("%s: %d series (%v), want %d", name, n, err, 2*per)
		}
	}

	// infra removed: its series end (the engine calls ForgetTarget once its loop has drained).
	targets = targets[:1]
	m.ForgetTarget("infra")
	for _, name := range append(names, "runner_manager_runners", "runner_manager_scale_up_latency_seconds") {
		fams, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
			for _, s := range f.GetMetric() {
				for _, l := range s.GetLabel() {
					if l.GetName() == "target" && l.GetValue() == "infra" {
						t.Errorf("%s{target=infra} is still exported after ForgetTarget", name)
					}
				}
			}
		}
	}
}

// The zeros of InitTargets are made at each scrape, not stored: 10,000 targets' stored series cost
// 99 MiB of heap. A vector gets a child only when its series first changes, and the scrape shows
// each series once (the child, not also a zero).
func TestInitTargetsStoresNoSeries(t *testing.T) {
	m := New("1.2.3")
	names := make([]string, 1000)
	for i := range names {
		names[i] = "t" + strconv.Itoa(i)
	}
	m.InitTargets(names)
	m.ObserveReconcile("t1", time.Second, nil)
	for _, vec := range []prometheus.Collector{m.runners, m.jobsPickedUp, m.runnerFailures, m.launchRefusals, m.scaleUpLatency, m.reconcileSeconds, m.reconcileErrors} {
		if n := testutil.CollectAndCount(vec); n > 1 {
			t.Errorf("a vector holds %d series after InitTargets of %d targets and one pass; want at most the one observed", n, len(names))
		}
	}
	for name, per := range map[string]int{"runner_manager_runners": len(RunnerStates), "runner_manager_reconcile_duration_seconds": 1,
		"runner_manager_scale_up_latency_seconds": 3, "runner_manager_runner_failures_total": len(FailureReasons),
		"runner_manager_launches_refused_total": len(RefusalReasons)} {
		if n, err := testutil.GatherAndCount(m.Registry(), name); err != nil || n != len(names)*per {
			t.Errorf("%s: %d series (%v), want %d", name, n, err, len(names)*per)
		}
	}
}
