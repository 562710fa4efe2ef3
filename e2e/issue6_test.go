//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// TestEngineAcceptance is issue 6's integration test on the real binary: 10 jobs on 2 targets all
// complete; an on-disk edit adding a third target and removing one changes only those two loops;
// SIGTERM exits within the drain bound without touching the busy runner, which finishes its job
// after the daemon is gone and is adopted and cleaned up by the next start.
func TestEngineAcceptance(t *testing.T) {
	const drain = 5 * time.Second
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/a", "acme/b", "acme/c"}})
	cfg := harness.NewConfig(t, sim)
	cfg.File.Daemon.MaxRunners = 5
	cfg.File.Daemon.ShutdownDrainTimeout = harness.Duration(drain)
	a := harness.RepoTarget("a", "acme/a", labels, 2)
	a.MinIdle = 1 // a warm runner that an edit of other targets must leave alone
	cfg.Add(a, harness.RepoTarget("b", "acme/b", labels, 2))
	d := harness.StartDaemon(t, cfg.Write(t))
	capacity := harness.StartCapacityMonitor(t, sim, cfg.StateDir)

	jobs := append(queueN(t, sim, "acme/a", 5, time.Second), queueN(t, sim, "acme/b", 5, time.Second)...)
	sim.WaitJobsDone(t, jobsTimeout, jobs...)
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)

	// Edit the file on disk: b goes, c comes; a is untouched.
	warm := settled(t, d, sim, "a", "acme/a", 1)
	mark := d.Mark()
	cfg.Remove("b").Add(harness.RepoTarget("c", "acme/c", labels, 2))
	cfg.Write(t)
	applied := waitApplied(t, d, mark)
	if _, summary, _ := strings.Cut(applied.Msg, ": "); summary != "added c; removed b" {
		t.Errorf("reload summary %q: want exactly c added and b removed", applied.Msg)
	}
	waitEvent(t, d, mark, "c", "loop", "target loop started")
	waitEvent(t, d, mark, "b", "loop", "drained and ended")
	cJob := sim.MustQueue(t, "acme/c", labels, time.Second)
	sim.WaitJobsDone(t, jobsTimeout, cJob)
	untouched(t, d, mark, "a")
	if got := idleIn(sim, "acme/a"); !slices.Equal(got, warm) {
		t.Errorf("a's warm runner changed across an edit of b and c: before %v, after %v", warm, got)
	}

	// A long job is running when SIGTERM arrives: the daemon exits within the bound and leaves it.
	long := sim.MustQueue(t, "acme/a", labels, 18*time.Second) // outlives the drain and the restart
	busy := sim.WaitJobStatus(t, eventTimeout, long, ghsim.StatusInProgress)
	stopAt := time.Now()
	d.Signal(syscall.SIGTERM)
	code, out := d.Wait(t, drain+5*time.Second)
	elapsed := time.Since(stopAt)
	if code != 0 || !strings.Contains(out, "left running for recovery (1 busy)") {
		t.Errorf("SIGTERM: exit %d after %s, stdout:\n%s\nwant 0 and one busy runner left for recovery", code, elapsed, out)
	}
	if elapsed > drain+2*time.Second { // the bound docs/engine.md promises
		t.Errorf("shutdown took %s, over the %s drain bound", elapsed, drain)
	}
	if j := sim.MustJob(t, long); j.Status != ghsim.StatusInProgress || j.RunnerName != busy.RunnerName {
		t.Fatalf("after the daemon exited the long job is %s on %q; want still in progress on %s", j.Status, j.RunnerName, busy.RunnerName)
	}
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)

	// The next start adopts the runner, which completes its job, and then cleans it up.
	mark2 := harness.LogMark(0)
	d2 := harness.StartDaemon(t, cfg.Path)
	d2.WaitRecord(t, mark2, eventTimeout, "the busy runner to be adopted", func(l harness.LogLine) bool {
		return l.Kind == "adopted" && l.Attempt == harness.AttemptOf(busy.RunnerName)
	})
	sim.WaitJobsDone(t, jobsTimeout, long)
	if j := sim.MustJob(t, long); j.Conclusion != "success" {
		t.Errorf("the long job ended %q, want success", j.Conclusion)
	}
	d2.WaitRecord(t, mark2, eventTimeout, "the adopted runner to be cleaned up", func(l harness.LogLine) bool {
		return l.Kind == "cleaned" && l.Attempt == harness.AttemptOf(busy.RunnerName)
	})
	d2.Signal(syscall.SIGTERM)
	if code, out := d2.Wait(t, drain+5*time.Second); code != 0 {
		t.Errorf("second daemon exit %d, stdout:\n%s", code, out)
	}
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)
	harness.AssertNoLeaks(t, sim, cfg.StateDir)
	capacity.AssertWithin(t, 5, map[string]int{"acme/a": 2, "acme/b": 2, "acme/c": 2})
}
