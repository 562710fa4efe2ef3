//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// reloadFixture is a daemon with two targets: "edited", which the test changes, and "bystander",
// which keeps one warm runner (min_idle 1) that no edit of "edited" may disturb.
type reloadFixture struct {
	sim  *harness.Sim
	cfg  *harness.Config
	d    *harness.Daemon
	warm string // the bystander's warm runner
}

func startReloadFixture(t *testing.T, edited func(*harness.Config), configMap bool) *reloadFixture {
	t.Helper()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/edited", "acme/bystander", "acme/added"}})
	cfg := harness.NewConfig(t, sim)
	cfg.File.Daemon.MaxRunners = 5
	bystander := harness.RepoTarget("bystander", "acme/bystander", labels, 2)
	bystander.MinIdle = 1
	cfg.Add(harness.RepoTarget("edited", "acme/edited", labels, 2), bystander)
	if edited != nil {
		edited(cfg)
	}
	path := cfg.Path
	if configMap {
		path = cfg.SwapConfigMap(t)
	} else {
		cfg.Write(t)
	}
	f := &reloadFixture{sim: sim, cfg: cfg, d: harness.StartDaemon(t, path)}
	f.warm = settled(t, f.d, sim, "bystander", "acme/bystander", 1)[0]
	return f
}

// busyThrough starts a long job on edited and returns a check, to call after the edits, that it
// finished success on the runner that took it: edits of other fields never kill a busy runner.
func (f *reloadFixture) busyThrough(t *testing.T) func() {
	t.Helper()
	done := f.busyFor(t, 8*time.Second)
	return func() { t.Helper(); done(time.Time{}) }
}

// busyFor starts a job of duration on edited and returns a check, to call after the edits with the
// time of the last write, that the job finished success on the runner that took it, and after that
// write: the runner was busy during every write.
func (f *reloadFixture) busyFor(t *testing.T, duration time.Duration) func(lastWrite time.Time) {
	t.Helper()
	id := f.sim.MustQueue(t, "acme/edited", labels, duration)
	busy := f.sim.WaitJobStatus(t, eventTimeout, id, ghsim.StatusInProgress)
	return func(lastWrite time.Time) {
		t.Helper()
		f.sim.WaitJobsDone(t, jobsTimeout, id)
		j := f.sim.MustJob(t, id)
		if j.Conclusion != "success" || j.RunnerName != busy.RunnerName {
			t.Errorf("the job busy through the edits ended %q on %s; want success on %s", j.Conclusion, j.RunnerName, busy.RunnerName)
		}
		if j.CompletedAt.Before(lastWrite) {
			t.Errorf("the busy job completed at %s, before the last write at %s: make it longer", j.CompletedAt, lastWrite)
		}
	}
}

// stop checks that no edit killed a busy runner, then stops the daemon as stopClean does.
func (f *reloadFixture) stop(t *testing.T) {
	t.Helper()
	harness.AssertNoBusyKilled(t, f.sim, f.cfg.StateDir)
	stopClean(t, f.d, f.sim)
}

// checkBystander fails the test if the bystander was disturbed after mark or its warm runner changed.
func (f *reloadFixture) checkBystander(t *testing.T, mark harness.LogMark) {
	t.Helper()
	untouched(t, f.d, mark, "bystander")
	if got := idleIn(f.sim, "acme/bystander"); !slices.Equal(got, []string{f.warm}) {
		t.Errorf("the bystander's warm runner changed: was %s, now %v", f.warm, got)
	}
}

// TestReloadCapacityTakesEffectNextPass raises a target's max_runners while its queue is long: more
// runners run at once right after the reload, never more than the new bound.
func TestReloadCapacityTakesEffectNextPass(t *testing.T) {
	f := startReloadFixture(t, func(c *harness.Config) { c.Target(t, "edited").MaxRunners = 1 }, false)
	before := harness.StartCapacityMonitor(t, f.sim, f.cfg.StateDir)
	jobs := queueN(t, f.sim, "acme/edited", 8, 2*time.Second)
	f.sim.WaitJobStatus(t, eventTimeout, jobs[0], ghsim.StatusInProgress)
	holds(t, 3*time.Second, "one runner at a time for edited (max_runners 1)", func() bool {
		return len(runnersIn(f.sim, "acme/edited")) <= 1
	})
	before.Stop()

	mark := f.d.Mark()
	f.cfg.Target(t, "edited").MaxRunners = 3
	f.cfg.Write(t)
	applied := waitApplied(t, f.d, mark)
	if !strings.Contains(applied.Msg, "changed edited (max_runners)") {
		t.Errorf("reload summary %q: want edited's max_runners changed", applied.Msg)
	}
	after := harness.StartCapacityMonitor(t, f.sim, f.cfg.StateDir)
	harness.Eventually(t, eventTimeout, "edited to run more than one runner after max_runners 1 -> 3", func() bool {
		return after.Report().ByScope["acme/edited"] > 1
	})
	f.sim.WaitJobsDone(t, jobsTimeout, jobs...)
	after.AssertWithin(t, 5, map[string]int{"acme/edited": 3, "acme/bystander": 2})
	before.AssertWithin(t, 5, map[string]int{"acme/edited": 1})
	untouched(t, f.d, mark, "bystander")
	f.stop(t)
}

// TestReloadLabelsReplacesIdleLetsBusyFinish changes a target's labels while it has a warm runner and
// a busy one: the warm runner is replaced by one with the new labels, the busy one finishes its job.
func TestReloadLabelsReplacesIdleLetsBusyFinish(t *testing.T) {
	f := startReloadFixture(t, func(c *harness.Config) { c.Target(t, "edited").MinIdle = 1 }, false)
	settled(t, f.d, f.sim, "edited", "acme/edited", 1)
	long := f.sim.MustQueue(t, "acme/edited", labels, 8*time.Second)
	busy := f.sim.WaitJobStatus(t, eventTimeout, long, ghsim.StatusInProgress)
	harness.Eventually(t, eventTimeout, "edited to be back at one warm runner beside the busy one", func() bool {
		return len(idleIn(f.sim, "acme/edited")) == 1
	})
	oldWarm := idleIn(f.sim, "acme/edited")[0]

	mark := f.d.Mark()
	f.cfg.Target(t, "edited").Labels = []string{"e2e", "gpu"}
	f.cfg.Write(t)
	applied := waitApplied(t, f.d, mark)
	if !strings.Contains(applied.Msg, "changed edited (labels)") {
		t.Errorf("reload summary %q: want edited's labels changed", applied.Msg)
	}
	waitEvent(t, f.d, mark, "edited", "deregistered", oldWarm)
	gpu := f.sim.MustQueue(t, "acme/edited", []string{"e2e", "gpu"}, time.Second)
	f.sim.WaitJobsDone(t, jobsTimeout, gpu, long)
	if j := f.sim.MustJob(t, long); j.Conclusion != "success" || j.RunnerName != busy.RunnerName {
		t.Errorf("the busy job ended %q on %s; want success on %s", j.Conclusion, j.RunnerName, busy.RunnerName)
	}
	for _, r := range f.sim.RegistrationsOf("acme/edited") {
		if r.RegisteredAt.After(applied.Time) && !slices.Contains(r.Labels, "gpu") {
			t.Errorf("runner %s registered after the reload without the new label: %v", r.Name, r.Labels)
		}
	}
	for _, l := range f.d.LogsSince(mark) {
		if l.Kind == "loop" && l.Target == "edited" {
			t.Errorf("a label change must not restart the loop: %s", l.Raw)
		}
	}
	f.checkBystander(t, mark)
	f.stop(t)
}

// TestReloadInvalidFileKeepsLastGood writes invalid files (a value the schema rejects, then a TOML
// syntax error): each is rejected with file:line:col in the log and in status, the last good config
// keeps running jobs, and a fixed file is applied again.
func TestReloadInvalidFileKeepsLastGood(t *testing.T) {
	f := startReloadFixture(t, nil, false)
	gen := f.d.Status(t).Config.Generation
	good := f.cfg.Render(t)
	mark := f.d.Mark()
	for _, c := range []struct{ name, key, bad string }{
		{"schema", "max_runners = ", "max_runners = 0"}, // below the minimum of 1
		{"syntax", "mode = ", "mode = 'autoscale"},      // unterminated string
	} {
		bad, line := breakLine(t, good, "edited", c.key, c.bad)
		at := f.d.Mark()
		harness.WriteConfig(t, f.cfg.Path, bad)
		rejected := f.d.WaitRecord(t, at, reloadTimeout, c.name+": the invalid file to be rejected", harness.OfKind("reload-failed"))
		where := fmt.Sprintf("%s:%d:", f.cfg.Path, line)
		if !strings.Contains(rejected.Msg, where) {
			t.Errorf("%s: rejection %q does not point at %s", c.name, rejected.Msg, where)
		}
		st := f.d.Status(t)
		if st.Config.LastReload.OK || st.Config.Generation != gen || len(st.Config.LastReload.Error) == 0 ||
			!strings.HasPrefix(st.Config.LastReload.Error[0], where) {
			t.Errorf("%s: status after the rejection: %+v; want ok=false, generation %d kept, an error at %s", c.name, st.Config, gen, where)
		}
		job := f.sim.MustQueue(t, "acme/edited", labels, time.Second)
		f.sim.WaitJobsDone(t, jobsTimeout, job)
	}

	harness.WriteConfig(t, f.cfg.Path, bytes.Replace(good, []byte("max_runners = 2"), []byte("max_runners = 3"), 1))
	waitApplied(t, f.d, mark)
	if st := f.d.Status(t); !st.Config.LastReload.OK || st.Config.Generation != gen+1 {
		t.Errorf("status after the fix: %+v; want ok and generation %d", st.Config, gen+1)
	}
	f.checkBystander(t, mark)
	f.stop(t)
}

// breakLine replaces the line starting with key in target's table by bad, and returns the file and
// the 1-based number of that line.
func breakLine(t *testing.T, file []byte, target, key, bad string) ([]byte, int) {
	t.Helper()
	start := bytes.Index(file, []byte("name = '"+target+"'"))
	if start < 0 {
		t.Fatalf("no target %s in:\n%s", target, file)
	}
	off := bytes.Index(file[start:], []byte("\n"+key))
	if off < 0 {
		t.Fatalf("no %q line for %s in:\n%s", key, target, file)
	}
	at := start + off + 1
	end := at + bytes.IndexByte(file[at:], '\n')
	return slices.Concat(file[:at], []byte(bad), file[end:]), bytes.Count(file[:at], []byte("\n")) + 1
}

// TestReloadRenameBasedWrites edits the file the way editors do (write a temporary, rename it over):
// every replacement is seen, not only the first (the watched inode changes each time).
func TestReloadRenameBasedWrites(t *testing.T) {
	f := startReloadFixture(t, nil, false)
	busyDone := f.busyThrough(t)
	applied := f.applyEach(t, func() { harness.WriteConfigViaRename(t, f.cfg.Path, f.cfg.Render(t)) },
		func() { f.cfg.Add(harness.RepoTarget("added", "acme/added", labels, 1)) },
		func() { f.cfg.Target(t, "added").MaxRunners = 2 },
		func() { f.cfg.Remove("added") },
	)
	for i, msg := range applied {
		if !strings.Contains(msg, "added") {
			t.Errorf("rename %d applied %q; want a change of target added", i+1, msg)
		}
	}
	busyDone()
	f.stop(t)
}

// applyEach makes each edit of f.cfg, writes the file with write and waits for the reload, with
// the bystander untouched; the first edit adds target added, and a job then runs on it. It returns
// each reload's summary.
func (f *reloadFixture) applyEach(t *testing.T, write func(), edits ...func()) []string {
	t.Helper()
	var applied []string
	for i, edit := range edits {
		mark := f.d.Mark()
		edit()
		write()
		applied = append(applied, waitApplied(t, f.d, mark).Msg)
		if i == 0 {
			job := f.sim.MustQueue(t, "acme/added", labels, time.Second)
			f.sim.WaitJobsDone(t, jobsTimeout, job)
		}
		f.checkBystander(t, mark)
	}
	return applied
}

// TestReloadConfigMapSymlinkSwap runs the daemon on a Kubernetes-style mounted ConfigMap
// (config.toml -> ..data/config.toml, ..data -> ..<timestamp>) and swaps ..data twice.
func TestReloadConfigMapSymlinkSwap(t *testing.T) {
	f := startReloadFixture(t, nil, true)
	busyDone := f.busyThrough(t)
	applied := f.applyEach(t, func() { f.cfg.SwapConfigMap(t) },
		func() { f.cfg.Add(harness.RepoTarget("added", "acme/added", labels, 1)) },
		func() { f.cfg.Target(t, "edited").MaxRunners = 3 },
	)
	t.Logf("the swaps applied: %q", applied)
	if st := f.d.Status(t); st.Config.Generation != 3 || !st.Config.LastReload.OK {
		t.Errorf("after two swaps status config is %+v; want generation 3, ok", st.Config)
	}
	busyDone()
	f.stop(t)
}

// TestReloadRemoveTargetLetsBusyFinish removes, and in a second round disables, a target while its
// runner is busy: that loop alone drains, the busy runner finishes its job `success`, and the loop
// ends only after that job did.
func TestReloadRemoveTargetLetsBusyFinish(t *testing.T) {
	f := startReloadFixture(t, nil, false)
	for _, edit := range []struct {
		name  string
		apply func()
		want  string // in the reload summary
	}{
		{"remove", func() { f.cfg.Remove("edited") }, "removed edited"},
		{"disable", func() { off := false; f.cfg.Target(t, "edited").Enabled = &off }, "disabled edited"},
	} {
		if edit.name == "disable" { // put the target back first
			mark := f.d.Mark()
			f.cfg.Add(harness.RepoTarget("edited", "acme/edited", labels, 2))
			f.cfg.Write(t)
			waitEvent(t, f.d, mark, "edited", "loop", "target loop started")
		}
		long := f.sim.MustQueue(t, "acme/edited", labels, 6*time.Second)
		busy := f.sim.WaitJobStatus(t, eventTimeout, long, ghsim.StatusInProgress)

		mark := f.d.Mark()
		edit.apply()
		f.cfg.Write(t)
		if applied := waitApplied(t, f.d, mark); !strings.Contains(applied.Msg, edit.want) {
			t.Errorf("%s: reload summary %q, want %q", edit.name, applied.Msg, edit.want)
		}
		waitEvent(t, f.d, mark, "edited", "loop", "draining")
		ended := f.d.WaitRecord(t, mark, jobsTimeout, edit.name+": edited's loop to end", func(l harness.LogLine) bool {
			return l.Kind == "loop" && l.Target == "edited" && strings.Contains(l.Msg, "ended")
		})
		j := f.sim.MustJob(t, long)
		if j.Status != ghsim.StatusCompleted || j.Conclusion != "success" || j.RunnerName != busy.RunnerName {
			t.Errorf("%s: the busy job is %s/%s on %s; want completed success on %s", edit.name, j.Status, j.Conclusion, j.RunnerName, busy.RunnerName)
		}
		if ended.Time.Before(j.CompletedAt) {
			t.Errorf("%s: edited's loop ended at %s, before its busy job completed at %s", edit.name, ended.Time, j.CompletedAt)
		}
		f.checkBystander(t, mark)
	}
	f.stop(t)
}

// TestSIGHUPReappliesSameConfigAsNoOp forces a reload of an unchanged file with SIGHUP: it is read
// and applied as a no-op (same generation, nothing restarted).
func TestSIGHUPReappliesSameConfigAsNoOp(t *testing.T) {
	f := startReloadFixture(t, nil, false)
	gen := f.d.Status(t).Config.Generation
	mark := f.d.Mark()
	f.d.Signal(syscall.SIGHUP)
	f.d.WaitRecord(t, mark, reloadTimeout, "the SIGHUP reload to find nothing to do", func(l harness.LogLine) bool {
		return l.Kind == "reload" && strings.Contains(l.Msg, "unchanged")
	})
	if st := f.d.Status(t); st.Config.Generation != gen || !st.Config.LastReload.OK {
		t.Errorf("after SIGHUP status config is %+v; want generation %d kept, ok", st.Config, gen)
	}
	untouched(t, f.d, mark, "edited")
	f.checkBystander(t, mark)
	f.stop(t)
}
