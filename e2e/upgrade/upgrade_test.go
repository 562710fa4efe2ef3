//go:build e2e

package upgrade

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// The daemon's log messages this test waits for (docs/upgrades.md, "What you will see").
const (
	msgDoesNotRun = "source binary changed but does not run; ignored until it changes again"
	msgConfirmed  = "upgrade candidate confirmed"
	msgDraining   = "upgrade: draining; busy runners finish their jobs first (each at most its target's max_job_duration)"
	msgInstalled  = "upgrade installed"
)

const (
	exitUpgradePending = 75 // cmd/runner-manager/exitcodes.go, docs/exit-codes.md

	// watchPoll is the source watcher's period in these tests (the hidden --upgrade-poll-interval;
	// operators run with selfupdate.DefaultInterval). watchTimeout covers one period on a loaded machine.
	watchPoll    = 2 * time.Second
	watchTimeout = watchPoll + 20*time.Second
	// busyJob outlasts the watcher's period after the job starts, so the upgrade is confirmed while
	// the runner is busy and the drain has a job to wait for.
	busyJob      = watchPoll + 13*time.Second
	eventTimeout = 30 * time.Second // a start, a log line or a job state change follows
)

var labels = []string{"e2e"}

// TestUpgradeWaitsForBusyJob is issue 7's end-to-end acceptance: the daemon runs the old version
// from its private copy with a job running; the source is replaced by the new one (after a partial
// file that must be ignored); the job finishes with success, only then the private copy is swapped
// (the old one kept as .old), the daemon exits 75, and the private path started again is the new
// version, runs the job that was queued during the drain, and leaves nothing behind.
func TestUpgradeWaitsForBusyJob(t *testing.T) {
	t.Parallel()
	oldBin, newBin := binaries(t)
	sim, cfg := simAndConfig(t, harness.RepoTarget("web", "acme/web", labels, 1))
	h := serviceHost(t, oldBin, cfg)

	// The package manager is half way through writing the new version when the daemon starts: its
	// first look (which compares with the compiled-in version) must reject the file, not take it.
	h.writePartial(t, newBin)
	d := startService(t, h.private, cfg, h.source)
	d.waitMsg(t, 0, msgDoesNotRun, eventTimeout)
	if st := guardState(t, cfg); st.Version != oldVersion || !st.Running {
		t.Fatalf("crash-loop guard record of the running old version: %+v; want version %s, running", st, oldVersion)
	}

	job := sim.MustQueue(t, "acme/web", labels, busyJob)
	sim.WaitJobStatus(t, eventTimeout, job, ghsim.StatusInProgress)
	if c := d.findMsg(0, msgConfirmed); c.Raw != "" {
		t.Fatalf("the partial source binary was taken as an upgrade: %s", c.Raw)
	}

	mark := d.mark()
	h.dropAtomically(t, newBin)
	confirmed := d.waitMsg(t, mark, msgConfirmed, watchTimeout)
	if !strings.Contains(confirmed.Raw, `"candidate":"`+newVersion+`"`) {
		t.Fatalf("confirmed a candidate other than %s: %s", newVersion, confirmed.Raw)
	}
	d.waitMsg(t, mark, msgDraining, eventTimeout)

	// Draining: the job is still running and nothing is swapped yet.
	if j := sim.MustJob(t, job); j.Status != ghsim.StatusInProgress {
		t.Fatalf("job %d is %s (%s) when the upgrade drain begins; it must still be running (is busyJob long enough?)", job, j.Status, j.Conclusion)
	}
	if snap := d.snapshot(t); snap.Draining != "upgrade" || snap.Version != oldVersion {
		t.Fatalf("status during the upgrade drain: draining %q version %q; want \"upgrade\" and %s", snap.Draining, snap.Version, oldVersion)
	}
	assertVersion(t, h.private, oldVersion)
	assertMissing(t, h.old())
	// A job queued during the drain must not get a runner from the old binary: the drain stops launching.
	waiting := sim.MustQueue(t, "acme/web", labels, time.Second)

	if code := d.wait(t, busyJob+eventTimeout); code != exitUpgradePending {
		t.Fatalf("the daemon exited %d after the upgrade; want %d (upgrade pending)", code, exitUpgradePending)
	}
	j := sim.MustJob(t, job)
	if j.Status != ghsim.StatusCompleted || j.Conclusion != "success" {
		t.Fatalf("the busy job ended %s/%s across the upgrade; want completed/success (promise 1)", j.Status, j.Conclusion)
	}
	installed := d.waitMsg(t, mark, msgInstalled, 0)
	if installed.Time.Before(j.CompletedAt) {
		t.Fatalf("the binary was swapped at %s, before the busy job completed at %s", installed.Time, j.CompletedAt)
	}
	if w := sim.MustJob(t, waiting); w.Status != ghsim.StatusQueued {
		t.Fatalf("the job queued during the upgrade drain is %s on %q; the old binary must not launch runners while draining", w.Status, w.RunnerName)
	}
	if regs := sim.RegistrationsOf("acme/web"); len(regs) != 1 {
		t.Fatalf("%d JIT registrations before the handover; want 1 (the busy job's): the drain launched runners", len(regs))
	}
	if out := d.stdout(); !strings.Contains(out, "daemon stopped; no runner left running") {
		t.Fatalf("the handover did not report an empty host:\n%s", out)
	}
	assertSwapped(t, h)

	// The service manager starts the private path again: it is the new version and runs the job.
	d2 := startService(t, h.private, cfg, h.source)
	if snap := statusCLI(t, h.private, cfg); snap.Version != newVersion {
		t.Fatalf("`runner-manager status` reports version %q after the upgrade; want %s", snap.Version, newVersion)
	}
	sim.WaitJobsDone(t, 2*eventTimeout, waiting)
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)
	if d2.exited() {
		t.Fatalf("the upgraded daemon exited (code %d) although its source holds its own version", d2.exitCode())
	}
	if code := d2.stop(t); code != 0 {
		t.Fatalf("the upgraded daemon exited %d on SIGTERM; want 0", code)
	}
	harness.AssertNoLeaks(t, sim, cfg.StateDir)
	assertVersion(t, h.old(), oldVersion) // kept for a rollback until the next upgrade or install
	// The handover and the clean stop after it are deliberate exits: no failed start is counted
	// against the new version, so the guard would not roll it back.
	if st := guardState(t, cfg); st.Version != newVersion || st.Running || st.FailedStarts != 0 || st.Rejected != "" {
		t.Fatalf("crash-loop guard record after the upgrade and a clean stop: %+v; want version %s, stopped, no failed start", st, newVersion)
	}
}

// TestIdleHostTakesUpgrade: with no target at all, a new source binary is still taken (there is
// nothing to drain), and the restarted private copy is the new version. Before that, a non-atomic
// copy over the source while the daemon watches (in place, cut off half way) is ignored.
func TestIdleHostTakesUpgrade(t *testing.T) {
	t.Parallel()
	oldBin, newBin := binaries(t)
	sim, cfg := simAndConfig(t)
	h := serviceHost(t, oldBin, cfg)

	d := startService(t, h.private, cfg, h.source)
	mark := d.mark()
	h.writePartial(t, newBin)
	d.waitMsg(t, mark, msgDoesNotRun, watchTimeout)
	if c := d.findMsg(mark, msgConfirmed); c.Raw != "" || d.exited() {
		t.Fatalf("the partial source binary was taken as an upgrade (daemon exited: %v): %s", d.exited(), c.Raw)
	}
	assertVersion(t, h.private, oldVersion)

	mark = d.mark()
	h.dropAtomically(t, newBin)
	d.waitMsg(t, mark, msgConfirmed, watchTimeout)
	if code := d.wait(t, eventTimeout); code != exitUpgradePending {
		t.Fatalf("the idle daemon exited %d after the upgrade; want %d (upgrade pending)", code, exitUpgradePending)
	}
	assertSwapped(t, h)

	d2 := startService(t, h.private, cfg, h.source)
	if snap := statusCLI(t, h.private, cfg); snap.Version != newVersion || len(snap.Targets) != 0 {
		t.Fatalf("after the upgrade `runner-manager status` reports version %q with %d targets; want %s with none", snap.Version, len(snap.Targets), newVersion)
	}
	if code := d2.stop(t); code != 0 {
		t.Fatalf("the upgraded daemon exited %d on SIGTERM; want 0", code)
	}
	harness.AssertNoLeaks(t, sim, cfg.StateDir)
}

// simAndConfig starts a simulator serving acme/web and writes the harness's fast config with targets.
func simAndConfig(t testing.TB, targets ...config.Target) (*harness.Sim, *harness.Config) {
	t.Helper()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web"}})
	cfg := harness.NewConfig(t, sim).Add(targets...)
	cfg.Write(t)
	return sim, cfg
}

// assertSwapped checks the files after a handover: the private path runs the new version, .old
// holds the previous one, and the source is untouched.
func assertSwapped(t testing.TB, h host) {
	t.Helper()
	assertVersion(t, h.private, newVersion)
	assertVersion(t, h.old(), oldVersion)
	assertVersion(t, h.source, newVersion)
}

func assertVersion(t testing.TB, path, want string) {
	t.Helper()
	if got := versionOf(t, path); got != "runner-manager "+want {
		t.Fatalf("%s --version printed %q; want \"runner-manager %s\"", path, got, want)
	}
}

func assertMissing(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s exists before the swap (err %v)", path, err)
	}
}
