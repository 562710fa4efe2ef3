//go:build e2e

package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
	"github.com/runner-manager/runner-manager/internal/status"
)

// TestRunnerThatNeverConnectsIsReplaced is issue 15.1 on the real binary: every runner registered
// while the fault is set runs but never connects; the job's runner is given up on at
// startup_timeout (registration_timed_out) and its replacement runs the job.
func TestRunnerThatNeverConnectsIsReplaced(t *testing.T) {
	t.Parallel()
	const startup = 5 * time.Second
	sim, cfg := simWithA(t, 1, func(a *config.Target) { // one slot: the replacement waits for it
		a.StartupTimeout = harness.Duration(startup)
	})
	sim.SetRunnerFault(runnerproto.AllRunners, runnerproto.FaultNeverOnline)
	d := harness.StartDaemon(t, cfg.Write(t))
	mark := d.Mark()
	job := sim.MustQueue(t, "acme/a", labels, time.Second)
	harness.Eventually(t, eventTimeout, "the first runner to register", func() bool { return len(sim.Registrations()) == 1 })
	sim.SetRunnerFault(runnerproto.AllRunners, "") // the replacement can connect
	registered := time.Now()
	failed := d.WaitRecord(t, mark, eventTimeout, "the runner that never connected to be given up on", func(l harness.LogLine) bool {
		return l.Kind == "failed" && strings.HasPrefix(l.Msg, "registration_timed_out: ")
	})
	if waited := time.Since(registered); waited < startup-time.Second {
		t.Errorf("given up on %s after its registration, before startup_timeout %s", waited, startup)
	}
	sim.WaitJobsDone(t, jobsTimeout, job)
	if j := sim.MustJob(t, job); j.Conclusion != "success" || j.RunnerName == harness.RunnerPrefix+failed.Attempt {
		t.Errorf("job %+v: want success on the replacement, not on %s", j, failed.Attempt)
	}
	if len(sim.Registrations()) != 2 {
		t.Errorf("registrations = %d, want the given-up runner and its replacement", len(sim.Registrations()))
	}
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)
	stopWithinBound(t, d, sim, cfg)
}

// TestSwitchToMonitorModeReapsTheWarmRunner is issue 15.3 on the real binary: a target with an
// idle warm runner switched to mode = "monitor" deregisters and stops it, and launches nothing.
func TestSwitchToMonitorModeReapsTheWarmRunner(t *testing.T) {
	t.Parallel()
	sim, cfg := simWithA(t, 2, func(a *config.Target) {
		a.MinIdle = 1
	})
	d := harness.StartDaemon(t, cfg.Write(t))
	harness.Eventually(t, eventTimeout, "the warm runner online", func() bool { return len(idleIn(sim, "acme/a")) == 1 })
	cfg.Target(t, "a").Mode = "monitor"
	cfg.Write(t)
	harness.Eventually(t, eventTimeout, "the warm runner to be reaped", func() bool { return len(sim.Runners()) == 0 })
	job := sim.MustQueue(t, "acme/a", labels, time.Second)
	harness.Eventually(t, eventTimeout, "monitor mode to see the job", func() bool {
		for _, tg := range d.Status(t).Targets {
			if tg.Name == "a" && tg.Mode == "monitor" && tg.Demand == 1 {
				return true
			}
		}
		return false
	})
	if n := len(sim.Registrations()); n != 1 || len(sim.Runners()) != 0 {
		t.Errorf("monitor mode registered runners: %d registrations in all, %d listed", n, len(sim.Runners()))
	}
	if j := sim.MustJob(t, job); j.Status != "queued" {
		t.Errorf("job %+v ran in monitor mode", j)
	}
	stopWithinBound(t, d, sim, cfg)
}

// TestRegistrationInFlightAtACrashIsNotLeft is issue 15.5 on the real binary: GitHub takes 1.5 s
// to answer the JIT registration and the daemon is killed 0.3 s after "launching runner", so the
// registration lands while no daemon runs. The restarted daemon must not forget the planned
// attempt before it can know: once the registration is listed, a clean stop leaves nothing
// registered at GitHub.
func TestRegistrationInFlightAtACrashIsNotLeft(t *testing.T) {
	t.Parallel()
	const latency = 1500 * time.Millisecond
	sim, cfg := simWithA(t, 1, func(a *config.Target) {
		a.MinIdle = 1 // a warm runner: what the stop leaves is idle, so it must be deregistered
	})
	path := cfg.Write(t)
	sim.AddFault(ghsim.Fault{Method: "POST", Path: "/repos/*/*/actions/runners/generate-jitconfig", Kind: ghsim.FaultLatency, Latency: latency, Count: 1})
	d := harness.StartDaemon(t, path)
	launching := d.WaitLog(t, 0, `launching runner`, eventTimeout)
	time.Sleep(300 * time.Millisecond) // the reproduction's kill moment: the JIT POST is in flight
	d.Kill9()
	if code, _ := d.Wait(t, 5*time.Second); code != -1 {
		t.Fatalf("the daemon exited %d, want killed", code)
	}
	if n := len(sim.Registrations()); n != 0 {
		t.Fatalf("%d registrations at the kill, want the JIT POST still in flight", n)
	}
	d = harness.StartDaemon(t, path)
	name := harness.RunnerPrefix + launching.Attempt
	harness.Eventually(t, eventTimeout, "the in-flight registration to land", func() bool {
		for _, r := range sim.Registrations() {
			if r.Name == name {
				return true
			}
		}
		return false
	})
	d.Signal(syscall.SIGTERM)
	if code, out := d.Wait(t, cfg.File.Daemon.ShutdownDrainTimeout.D()+2*time.Second); code != 0 {
		t.Fatalf("stop: exit %d:\n%s", code, out)
	}
	if rs := sim.ManagedRunners(); len(rs) != 0 {
		t.Fatalf("registered at GitHub after the clean stop: %+v (the landed one was %s)", rs, name)
	}
	harness.AssertNoLeaks(t, sim, cfg.StateDir)
}

// TestOneRefusedRepositoryOfAnOrganizationIsSkipped is issue 15.6 on the real binary: one
// repository of an organization target answers 403 on its runs; the jobs of the other repository
// run without a backoff, and status and the log name the refused one until it is readable again.
func TestOneRefusedRepositoryOfAnOrganizationIsSkipped(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.SimOptions{Orgs: []string{"acme"}, Repos: []string{"acme/web", "acme/api"}})
	cfg := harness.NewConfig(t, sim)
	cfg.Add(harness.OrgTarget("org", "acme", labels, 2))
	if err := sim.SetRepoForbidden("acme/web", true); err != nil {
		t.Fatal(err)
	}
	d := harness.StartDaemon(t, cfg.Write(t))
	// An organization's runner takes a job of any of its repositories, so the refused one's job may
	// run on a runner launched for the other: only the served one is owed while acme/web refuses.
	refused := sim.MustQueue(t, "acme/web", labels, time.Second)
	served := sim.MustQueue(t, "acme/api", labels, time.Second)
	sim.WaitJobsDone(t, jobsTimeout, served)
	d.WaitRecord(t, 0, eventTimeout, "a demand-partial event naming acme/web", func(l harness.LogLine) bool {
		return l.Kind == "demand-partial" && strings.Contains(l.Msg, "acme/web")
	})
	org := func() status.Target {
		for _, tg := range d.Status(t).Targets {
			if tg.Name == "org" {
				return tg
			}
		}
		t.Fatal("status has no target org")
		return status.Target{}
	}
	if tg := org(); !strings.Contains(tg.Warning, "acme/web") || tg.Backoff.Active || tg.LastError != "" {
		t.Errorf("status of org while acme/web refuses: warning %q, backoff %+v, last error %q; want acme/web named, no backoff, no error", tg.Warning, tg.Backoff, tg.LastError)
	}
	if err := sim.SetRepoForbidden("acme/web", false); err != nil {
		t.Fatal(err)
	}
	sim.WaitJobsDone(t, jobsTimeout, refused)
	harness.Eventually(t, eventTimeout, "the warning to clear", func() bool { return org().Warning == "" })
	stopWithinBound(t, d, sim, cfg)
}

// TestStopWhileGitHubHangsKeepsTheBound is issue 15.8 on the real binary: with a busy runner and
// an idle warm one, GitHub stops answering (every REST call of the repository hangs); SIGTERM
// still ends the daemon within shutdown_drain_timeout + 2 s, and the busy runner is left running
// its job.
func TestStopWhileGitHubHangsKeepsTheBound(t *testing.T) {
	t.Parallel()
	const drain = 3 * time.Second
	sim, cfg := simWithA(t, 2, func(a *config.Target) {
		a.MinIdle = 1
	})
	cfg.File.Daemon.ShutdownDrainTimeout = harness.Duration(drain)
	d := harness.StartDaemon(t, cfg.Write(t))
	long := sim.MustQueue(t, "acme/a", labels, time.Minute)
	busy := sim.WaitJobStatus(t, eventTimeout, long, ghsim.StatusInProgress)
	harness.Eventually(t, eventTimeout, "a warm idle runner beside the busy one", func() bool { return len(idleIn(sim, "acme/a")) == 1 })
	hang := sim.AddFault(ghsim.Fault{Path: "/repos/**", Kind: ghsim.FaultLatency, Latency: 10 * time.Minute})
	harness.Eventually(t, eventTimeout, "a call to hang", func() bool { return sim.FaultHits(hang) > 0 })
	stopAt := time.Now()
	d.Signal(syscall.SIGTERM)
	code, out := d.Wait(t, drain+10*time.Second)
	elapsed := time.Since(stopAt)
	if code != 0 {
		t.Errorf("SIGTERM while GitHub hangs: exit %d, want 0; stdout:\n%s", code, out)
	}
	if elapsed > drain+2*time.Second {
		t.Errorf("shutdown took %s while GitHub hung, over shutdown_drain_timeout %s + 2 s", elapsed, drain)
	}
	if j := sim.MustJob(t, long); j.Status != ghsim.StatusInProgress || j.RunnerName != busy.RunnerName {
		t.Errorf("after the stop the long job is %s on %q; want still in progress on %s", j.Status, j.RunnerName, busy.RunnerName)
	}
	live, err := harness.LiveAttempts(cfg.StateDir)
	if err != nil || !live[harness.AttemptOf(busy.RunnerName)] {
		t.Errorf("the busy runner %s is not running after the stop (live %v, err %v)", busy.RunnerName, live, err)
	}
}

// stopWithinBound stops d within the promised bound (shutdown_drain_timeout + 2 s) and checks that
// nothing is left: no registration, process or runtime directory.
func stopWithinBound(t *testing.T, d *harness.Daemon, sim *harness.Sim, cfg *harness.Config) {
	t.Helper()
	if code := d.Stop(t, cfg.File.Daemon.ShutdownDrainTimeout.D()+2*time.Second); code != 0 {
		t.Errorf("stop: exit %d", code)
	}
	harness.AssertNoLeaks(t, sim, cfg.StateDir)
}
