//go:build e2e

package crash

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/scalesetdemand"
	"github.com/runner-manager/runner-manager/internal/status"
)

const setName = "web-set"

// newScaleSetScenario is one scale-set target on acme/web (max_runners 2 on a host of 3) whose
// stale sessions the simulator keeps for an hour: a restart that waited for its own stale session
// to expire would never finish the jobs within jobsTimeout.
func newScaleSetScenario(t *testing.T, enabled bool) *scenario {
	t.Helper()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{webRepo},
		Actions: ghsim.ActionsOptions{SessionExpiry: time.Hour, AssignTimeout: time.Hour}})
	cfg := harness.NewConfig(t, sim)
	cfg.File.Daemon.MaxRunners = hostMax
	cfg.File.Daemon.ShutdownDrainTimeout = config.Duration(3 * time.Second)
	tg := harness.RepoTarget("web", webRepo, nil, targetMax)
	tg.ScaleSet = setName
	tg.Enabled = &enabled
	cfg.Add(tg)
	s := &scenario{t: t, sim: sim, cfg: cfg, host: hostMax, perScope: map[string]int{webRepo: targetMax}}
	s.path = cfg.Write(t)
	s.mon = harness.StartCapacityMonitor(t, sim, cfg.StateDir)
	return s
}

// TestScaleSetCrashPoints kills the daemon with SIGKILL after the session id is journaled, after a
// message is processed but before it is acknowledged, and after a scale-set JIT call, then restarts
// it on the same state directory: every job queued for the set runs exactly once, nothing leaks,
// and the restart deletes its own stale session instead of waiting (an hour here) for it to expire.
func TestScaleSetCrashPoints(t *testing.T) {
	t.Parallel()
	for _, point := range []engine.CrashPoint{scalesetdemand.CrashSessionJournaled, scalesetdemand.CrashBeforeAck, engine.CrashAfterJIT} {
		t.Run(string(point), func(t *testing.T) {
			t.Parallel()
			s := newScaleSetScenario(t, false)
			// The target is enabled by a reload, once the daemon runs: the session opens after the
			// ready line, so the first crash point cannot come before it.
			d := s.start(crashEnv + "=" + string(point))
			for range 3 {
				s.jobs = append(s.jobs, s.sim.MustQueue(t, webRepo, []string{setName}, 1500*time.Millisecond))
			}
			s.cfg.Target(t, "web").Enabled = nil
			s.cfg.Write(t)
			s.expectKilled(d, deathTimeout, "crash at "+string(point))

			d = s.start()
			s.settle(d)
			if out := d.Stderr(); strings.Contains(out, "session refused (409)") {
				t.Errorf("the restart met its own stale session (409):\n%s", out)
			}
			sets := s.sim.ScaleSets()
			if len(sets) != 1 || sets[0].Session != "" || sets[0].Unacked != 0 {
				t.Errorf("after the final stop: scale sets %+v, want one, its session deleted, nothing unacknowledged", sets)
			}
			if leaks := s.sim.CredentialLeaks(); len(leaks) != 0 {
				t.Errorf("credentials sent to the wrong host: %v", leaks)
			}
		})
	}
}

// TestScaleSetSecondHostIsToldWhy: GitHub allows one session per scale set. A second host
// configured with the same set starts nothing and says, in status and in its log, that another
// session holds the set and that it keeps retrying; the first host is undisturbed.
func TestScaleSetSecondHostIsToldWhy(t *testing.T) {
	t.Parallel()
	s := newScaleSetScenario(t, true)
	first := s.start()
	waitSession := func(d *harness.Daemon, what string, cond func(*status.ScaleSet) bool) status.Target {
		t.Helper()
		var last status.Target
		if !pollUntil(deathTimeout, func() bool {
			for _, tg := range d.Status(t).Targets {
				if tg.Name == "web" && tg.ScaleSet != nil && cond(tg.ScaleSet) {
					last = tg
					return true
				}
			}
			return false
		}) {
			t.Fatalf("timed out waiting for %s; status %+v", what, d.Status(t).Targets)
		}
		return last
	}
	waitSession(first, "the first host's session", func(ss *status.ScaleSet) bool { return ss.Session == "open" })

	other := harness.NewConfig(t, s.sim)
	other.File.Daemon = s.cfg.File.Daemon
	other.File.Daemon.StateDir = other.StateDir
	other.Add(s.cfg.File.Targets...)
	second := harness.StartDaemon(t, other.Write(t))
	tg := waitSession(second, "the second host to be told", func(ss *status.ScaleSet) bool { return ss.Session == "waiting" })
	for _, want := range []string{"another session holds scale set", "another host uses this scale set", "retrying"} {
		if !strings.Contains(tg.ScaleSet.Waiting, want) || !strings.Contains(tg.LastError, want) {
			t.Errorf("second host: waiting %q, last error %q; want both to say %q", tg.ScaleSet.Waiting, tg.LastError, want)
		}
	}
	if !strings.Contains(second.Stderr(), "scale-set session refused (409); retrying") {
		t.Errorf("second host's log does not say why it waits:\n%s", second.Stderr())
	}

	s.jobs = append(s.jobs, s.sim.MustQueue(t, webRepo, []string{setName}, time.Second))
	s.sim.WaitJobsDone(t, jobsTimeout, s.jobs...)
	if n := len(second.Status(t).Runners); n != 0 {
		t.Errorf("the second host owns %d runners, want none", n)
	}
	for _, r := range s.sim.Registrations() {
		if strings.Contains(r.Name, harness.RunnerPrefix) && r.JobID != 0 && !strings.HasPrefix(r.Name, runnerPrefixOf(t, first)) {
			t.Errorf("job %d ran on %s, not a runner of the first host", r.JobID, r.Name)
		}
	}
	second.Stop(t, stopTimeout)
	s.settle(first)
}

// runnerPrefixOf is the runner-name prefix of daemon d's host (runner-manager-<host id>-).
func runnerPrefixOf(t *testing.T, d *harness.Daemon) string {
	t.Helper()
	for _, r := range d.Status(t).Runners {
		if i := strings.LastIndexByte(r.Name, '-'); i > 0 {
			return r.Name[:i+1]
		}
	}
	for _, e := range d.Status(t).Events {
		if i := strings.Index(e.Message, harness.RunnerPrefix); i >= 0 {
			name := strings.Fields(e.Message[i:])[0]
			return name[:strings.LastIndexByte(name, '-')+1]
		}
	}
	t.Fatal("no runner name of the first host in its status")
	return ""
}
