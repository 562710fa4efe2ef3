//go:build e2e

package e2e

import (
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

// TestOneJob is the smallest end-to-end run: one target, one job, a clean stop, nothing left.
func TestOneJob(t *testing.T) {
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web"}})
	cfg := harness.NewConfig(t, sim)
	cfg.Add(harness.RepoTarget("web", "acme/web", []string{"e2e"}, 2))
	d := harness.StartDaemon(t, cfg.Write(t))
	job := sim.MustQueue(t, "acme/web", []string{"e2e"}, time.Second)
	sim.WaitJobsDone(t, 60*time.Second, job)
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)
	d.Signal(syscall.SIGTERM)
	code, out := d.Wait(t, 20*time.Second)
	if code != 0 {
		t.Fatalf("daemon exited %d after SIGTERM; stdout:\n%s", code, out)
	}
	harness.AssertNoLeaks(t, sim, cfg.StateDir)
}
