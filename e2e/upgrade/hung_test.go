//go:build e2e

package upgrade

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
)

// TestUpgradeDrainEndsAHungJobAtMaxJobDuration is issue 30 item 1's upgrade: a job hangs (its
// runner ignores SIGTERM) while an upgrade is confirmed; the drain waits for it only until the
// target's max_job_duration ends it (stopped, killed 15 s later), then swaps and hands over.
func TestUpgradeDrainEndsAHungJobAtMaxJobDuration(t *testing.T) {
	t.Parallel()
	const bound = 10 * time.Second // outlasts the watcher's confirmation, so the drain has a job to wait for
	oldBin, newBin := binaries(t)
	web := harness.RepoTarget("web", "acme/web", labels, 1)
	web.MaxJobDuration = harness.Duration(bound)
	sim, cfg := simAndConfig(t, web)
	h := serviceHost(t, oldBin, cfg)
	d := startService(t, h.private, cfg, h.source)

	hung, err := sim.QueueJobSpec(ghsim.JobSpec{Repo: "acme/web", Labels: labels, Duration: time.Second, Fault: runnerproto.FaultHang})
	if err != nil {
		t.Fatal(err)
	}
	sim.WaitJobStatus(t, eventTimeout, hung, ghsim.StatusInProgress)
	mark := d.mark()
	h.dropAtomically(t, newBin)
	d.waitMsg(t, mark, msgConfirmed, watchTimeout)
	draining := d.waitMsg(t, mark, msgDraining, eventTimeout)
	ended := d.WaitRecord(t, mark, bound+eventTimeout, "the hung runner ended for max_job_duration", func(l harness.LogLine) bool {
		return l.Kind == "failed" && strings.HasPrefix(l.Msg, "max_job_duration: ")
	})
	if ended.Time.Before(draining.Time) {
		t.Fatalf("the hung runner was ended (%s) before the drain began (%s): the test shows nothing about the drain", ended.Time, draining.Time)
	}
	if code := d.wait(t, 15*time.Second+eventTimeout); code != exitUpgradePending {
		t.Fatalf("the daemon exited %d; want %d (upgrade pending) once max_job_duration ended the hung job", code, exitUpgradePending)
	}
	installed := d.waitMsg(t, mark, msgInstalled, 0)
	if installed.Time.Before(ended.Time) {
		t.Fatalf("swapped at %s, before the hung runner was ended at %s", installed.Time, ended.Time)
	}
	assertSwapped(t, h)
	if err := sim.FinishJob(hung, "failure", true); err != nil { // GitHub gives up on the lost runner
		t.Fatal(err)
	}
	d2 := startService(t, h.private, cfg, h.source)
	if code := d2.stop(t); code != 0 {
		t.Fatalf("the upgraded daemon exited %d on SIGTERM; want 0", code)
	}
	harness.AssertNoLeaks(t, sim, cfg.StateDir)
}
