//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

// TestScaleUpAndDownWithinLimits queues more work than the host may run at once: the host bound (3)
// and each target's bound (2) are never exceeded while the queue drains, the host bound is reached,
// and once demand is gone idle runners are reaped after idle_timeout, except min_idle warm ones.
func TestScaleUpAndDownWithinLimits(t *testing.T) {
	const idle = 2 * time.Second
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/a", "acme/b"}})
	cfg := harness.NewConfig(t, sim)
	cfg.File.Daemon.MaxRunners = 3
	a := harness.RepoTarget("a", "acme/a", labels, 2)
	a.MinIdle = 1
	a.IdleTimeout = harness.Duration(idle)
	b := harness.RepoTarget("b", "acme/b", labels, 2)
	b.IdleTimeout = harness.Duration(idle)
	cfg.Add(a, b)
	capacity := harness.StartCapacityMonitor(t, sim, cfg.StateDir)
	d := harness.StartDaemon(t, cfg.Write(t))

	jobs := append(queueN(t, sim, "acme/a", 6, 2*time.Second), queueN(t, sim, "acme/b", 6, 2*time.Second)...)
	sim.WaitJobsDone(t, jobsTimeout, jobs...)
	capacity.AssertWithin(t, 3, map[string]int{"acme/a": 2, "acme/b": 2})
	if r := capacity.Report(); r.Registered < 3 {
		t.Errorf("the host bound was never reached (%s): the test did not load the daemon enough", r)
	}
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)

	// Scale down: b has no min_idle and goes to zero; a keeps exactly one warm runner.
	harness.Eventually(t, idle+eventTimeout, "b to scale to zero and a to one warm runner", func() bool {
		return len(runnersIn(sim, "acme/b")) == 0 && len(idleIn(sim, "acme/a")) == 1 && len(runnersIn(sim, "acme/a")) == 1
	})
	warm := idleIn(sim, "acme/a")[0]
	holds(t, 2*idle+time.Second, "a's warm runner "+warm+" (min_idle 1, idle_timeout "+idle.String()+")", func() bool {
		r := idleIn(sim, "acme/a")
		return len(r) == 1 && r[0] == warm && len(runnersIn(sim, "acme/b")) == 0
	})
	if live, err := harness.LiveAttempts(cfg.StateDir); err != nil || len(live) != 1 || !live[harness.AttemptOf(warm)] {
		t.Errorf("live runner processes %v (%v); want only the warm runner %s", live, err, warm)
	}
	stopClean(t, d, sim)
	capacity.AssertWithin(t, 3, map[string]int{"acme/a": 2, "acme/b": 2})
}
