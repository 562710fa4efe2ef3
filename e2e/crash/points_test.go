//go:build e2e

package crash

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/runner"
)

// crashEnv is the daemon's fault-injection switch (cmd/runner-manager/crashhook.go).
const crashEnv = "RUNNER_MANAGER_TEST_CRASH_AT"

// evidence says whether the state the crashed daemon left for attempt proves it died at the point.
type evidence struct {
	what  string
	holds func(s *scenario, attempt string) bool
}

// crashPoints is every engine.CrashPoint with what must be observable once the daemon died there:
// the last event the attempt reached (written just before the hook fires) and, where the point sits
// between two events or two side effects, the side effect that did or did not happen.
var crashPoints = []struct {
	point engine.CrashPoint
	last  engine.EventKind // the crashed attempt's last logged event
	proof *evidence        // nil: the event alone pins the point
	job   time.Duration    // job length: long enough for the point to be reached
}{
	{engine.CrashAfterPlan, engine.EventPlanned, &evidence{"no JIT registration yet", func(s *scenario, a string) bool { return !s.registered(a) }}, 1500 * time.Millisecond},
	{engine.CrashAfterJIT, engine.EventPlanned, &evidence{"JIT registration listed", (*scenario).registered}, 1500 * time.Millisecond},
	{engine.CrashAfterRegistered, engine.EventRegistered, &evidence{"registered, no process", func(s *scenario, a string) bool { return s.registered(a) && !s.alive(a) }}, 1500 * time.Millisecond},
	{engine.CrashAfterStart, engine.EventRegistered, &evidence{"a live shim the journal has no pid for", (*scenario).alive}, 1500 * time.Millisecond},
	{engine.CrashAfterStarted, engine.EventStarted, &evidence{"a live shim", (*scenario).alive}, 1500 * time.Millisecond},
	// A runner is journaled busy only when a pass sees it running a job: the job must outlast a pass.
	{engine.CrashAfterBusy, engine.EventBusy, nil, 3 * time.Second},
	{engine.CrashAfterExit, engine.EventExited, nil, 1500 * time.Millisecond},
	{engine.CrashAfterDeregister, engine.EventDeregistered, &evidence{"runtime directory still there", (*scenario).hasDir}, 1500 * time.Millisecond},
	{engine.CrashAfterCgroup, engine.EventRegistered, &evidence{"a runner cgroup, no process", func(s *scenario, a string) bool { return s.hasCgroup(a) && !s.alive(a) }}, 1500 * time.Millisecond},
	{engine.CrashAfterCgroupRemoved, engine.EventDeregistered, &evidence{"runner cgroup removed, runtime directory still there", func(s *scenario, a string) bool { return !s.hasCgroup(a) && s.hasDir(a) }}, 1500 * time.Millisecond},
	{engine.CrashMidClean, engine.EventDeregistered, &evidence{"runtime directory removed", func(s *scenario, a string) bool { return !s.hasDir(a) }}, 1500 * time.Millisecond},
}

// TestCrashPoints kills the daemon (SIGKILL, by its own crash hook) at every labelled point of the
// lifecycle while jobs are queued on two targets, restarts it without the hook on the same state
// directory, and checks that recovery finishes every job and leaves nothing behind (promises 1-3).
func TestCrashPoints(t *testing.T) {
	t.Parallel()
	if len(crashPoints) < 11 {
		t.Fatalf("only %d crash points covered", len(crashPoints))
	}
	for _, cp := range crashPoints {
		t.Run(string(cp.point), func(t *testing.T) {
			t.Parallel()
			for round := 1; round <= *rounds; round++ {
				ok := t.Run(fmt.Sprintf("round-%d", round), func(t *testing.T) {
					s := newScenario(t, hostMax, targetMax, webRepo, apiRepo)
					d := s.start(crashEnv + "=" + string(cp.point))
					// Queued only once the daemon runs: its first pass may start before it says so.
					for range 3 {
						s.queue(webRepo, cp.job)
					}
					for range 2 {
						s.queue(apiRepo, cp.job)
					}
					s.expectKilled(d, deathTimeout, "crash point "+string(cp.point))
					s.assertDiedAt(d, cp.last, cp.proof)
					s.settle(s.start())
				})
				if !ok {
					break // one failing round says it; the rest would repeat it
				}
			}
		})
	}
}

// TestCrashBeforeTheFirstRuntimeDirectory is the after-registered crash on a fresh host with room for
// one runner: the crash comes before any runtime directory (nor their root, state_dir/runners) was
// ever made, and the recovered runner's slot is the only one, so nothing else creates that root.
// Recovery must still conclude the attempt, free the slot and run the job.
func TestCrashBeforeTheFirstRuntimeDirectory(t *testing.T) {
	t.Parallel()
	for round := 1; round <= *rounds; round++ {
		ok := t.Run(fmt.Sprintf("round-%d", round), func(t *testing.T) {
			s := newScenario(t, 1, 1, webRepo)
			d := s.start(crashEnv + "=" + string(engine.CrashAfterRegistered))
			s.queue(webRepo, 1500*time.Millisecond)
			s.expectKilled(d, deathTimeout, "crash point "+string(engine.CrashAfterRegistered))
			s.assertDiedAt(d, engine.EventRegistered, &evidence{"registered, no process", func(s *scenario, a string) bool { return s.registered(a) && !s.alive(a) }})
			s.settle(s.start())
		})
		if !ok {
			break
		}
	}
}

// assertDiedAt checks, from the killed daemon's log and what it left, that some attempt's last event
// is last and that proof holds for it: the hook fired where it is named, not somewhere else.
func (s *scenario) assertDiedAt(d *harness.Daemon, last engine.EventKind, proof *evidence) {
	s.t.Helper()
	lastKind := map[string]string{}
	var order []string
	for _, l := range d.Logs() {
		if l.Attempt == "" || l.Kind == "" {
			continue // not an engine event (the launcher logs "runner started" with the attempt too)
		}
		if _, seen := lastKind[l.Attempt]; !seen {
			order = append(order, l.Attempt)
		}
		lastKind[l.Attempt] = l.Kind
	}
	var seen []string
	for _, a := range order {
		seen = append(seen, a+"="+lastKind[a])
		if lastKind[a] == string(last) && (proof == nil || proof.holds(s, a)) {
			return
		}
	}
	want := string(last)
	if proof != nil {
		want += " with " + proof.what
	}
	s.t.Fatalf("no attempt of the killed daemon ended at %s; last events: %v", want, seen)
}

// registered reports whether the simulator still lists attempt's JIT registration.
func (s *scenario) registered(attempt string) bool {
	for _, r := range s.sim.Registrations() {
		if r.Name == harness.RunnerPrefix+attempt && r.RemovedAt.IsZero() {
			return true
		}
	}
	return false
}

// alive reports whether a shim or runner process of attempt runs.
func (s *scenario) alive(attempt string) bool {
	live, err := harness.LiveAttempts(s.cfg.StateDir)
	if err != nil {
		s.t.Fatalf("list runner processes: %v", err)
	}
	return live[attempt]
}

// hasCgroup reports whether attempt's runner cgroup exists (the daemon runs in the test's cgroup,
// so its runner cgroups are where this process's layout puts them).
func (s *scenario) hasCgroup(attempt string) bool {
	dir, err := runner.RunnerCgroupPath(attempt)
	if err != nil {
		s.t.Fatalf("the crash suite needs the host's cgroups (the daemon uses them): %v", err)
	}
	_, err = os.Stat(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.t.Fatalf("stat the runner cgroup of %s: %v", attempt, err)
	}
	return err == nil
}

// hasDir reports whether attempt's runtime directory exists (runner.RuntimeRootFor(state_dir)/<id>).
func (s *scenario) hasDir(attempt string) bool {
	_, err := os.Stat(filepath.Join(runner.RuntimeRootFor(s.cfg.StateDir), attempt))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.t.Fatalf("stat the runtime directory of %s: %v", attempt, err)
	}
	return err == nil
}
