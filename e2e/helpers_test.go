//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/status"
)

// Timeouts of the suite: generous against a loaded 2-core CI machine, never reached when green.
const (
	jobsTimeout   = 90 * time.Second // a batch of short jobs completes
	reloadTimeout = 20 * time.Second // a file change is applied (debounce + load + apply)
	eventTimeout  = 30 * time.Second // a loop or runner event follows
)

var labels = []string{"e2e"}

// simWithA starts the simulator with repository acme/a, and a config whose one target, a, serves
// it with the suite's labels and at most maxRunners runners; set, when not nil, changes the target
// before it is added. The daemon is the caller's to start (harness.StartDaemon).
func simWithA(t *testing.T, maxRunners int, set func(a *config.Target)) (*harness.Sim, *harness.Config) {
	t.Helper()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/a"}})
	cfg := harness.NewConfig(t, sim)
	a := harness.RepoTarget("a", "acme/a", labels, maxRunners)
	if set != nil {
		set(&a)
	}
	cfg.Add(a)
	return sim, cfg
}

// waitApplied waits for the reload event after mark that applies a new generation, and returns it.
func waitApplied(t *testing.T, d *harness.Daemon, mark harness.LogMark) harness.LogLine {
	t.Helper()
	return d.WaitRecord(t, mark, reloadTimeout, "a config generation to be applied", func(l harness.LogLine) bool {
		return l.Kind == "reload" && strings.Contains(l.Msg, "applied")
	})
}

// waitEvent waits for an event of kind about target after mark whose message contains text.
func waitEvent(t *testing.T, d *harness.Daemon, mark harness.LogMark, target, kind, text string) harness.LogLine {
	t.Helper()
	what := fmt.Sprintf("a %q event of target %q containing %q", kind, target, text)
	return d.WaitRecord(t, mark, eventTimeout, what, func(l harness.LogLine) bool {
		return l.Kind == kind && l.Target == target && strings.Contains(l.Msg, text)
	})
}

// queueN queues n jobs of duration in repo and returns their ids.
func queueN(t *testing.T, sim *harness.Sim, repo string, n int, duration time.Duration) []int64 {
	t.Helper()
	var ids []int64
	for range n {
		ids = append(ids, sim.MustQueue(t, repo, labels, duration))
	}
	return ids
}

// untouched fails the test if target had any loop or runner-lifecycle event after mark: an edit
// that did not concern it must not restart its loop or replace its runners.
func untouched(t *testing.T, d *harness.Daemon, mark harness.LogMark, target string) {
	t.Helper()
	disturbing := []string{"loop", "planned", "deregistered", "cleaned", "failed", "adopted"}
	got := harness.Records(d.LogsSince(mark), func(l harness.LogLine) bool {
		return l.Target == target && slices.Contains(disturbing, l.Kind)
	})
	for _, l := range got {
		t.Errorf("target %s was disturbed by an edit that did not concern it: %s", target, l.Raw)
	}
}

// runnersIn are the names of runner-manager's runners registered in scope ("owner/name").
func runnersIn(sim *harness.Sim, scope string) []string {
	var out []string
	for _, r := range sim.ManagedRunners() {
		if strings.EqualFold(r.Scope, scope) {
			out = append(out, r.Name)
		}
	}
	return out
}

// idleIn are the names of online, idle runner-manager runners in scope.
func idleIn(sim *harness.Sim, scope string) []string {
	var out []string
	for _, r := range sim.ManagedRunners() {
		if strings.EqualFold(r.Scope, scope) && r.Status == "online" && !r.Busy {
			out = append(out, r.Name)
		}
	}
	return out
}

// settled waits until target's loop owns exactly n runners, all idle (none starting or busy), and
// the simulator lists them online and idle in scope: the quiet state in which an edit elsewhere must
// change nothing. It returns the idle runners' names.
func settled(t *testing.T, d *harness.Daemon, sim *harness.Sim, target, scope string, n int) []string {
	t.Helper()
	var last status.Target
	var idle []string
	ok := harness.Poll(eventTimeout, func() bool {
		idle = idleIn(sim, scope)
		if len(idle) != n || len(runnersIn(sim, scope)) != n {
			return false
		}
		for _, tg := range d.Status(t).Targets {
			if tg.Name == target {
				last = tg
				return tg.Owned == n && tg.Idle == n && tg.Busy == 0 && tg.Starting == 0
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("target %s did not settle at %d idle runners; simulator lists %v, last status %+v", target, n, runnersIn(sim, scope), last)
	}
	return idle
}

// jobOf returns the job with id from a snapshot list.
func jobOf(jobs []ghsim.Job, id int64) (ghsim.Job, bool) {
	i := slices.IndexFunc(jobs, func(j ghsim.Job) bool { return j.ID == id })
	if i < 0 {
		return ghsim.Job{}, false
	}
	return jobs[i], true
}

// stopClean stops d with SIGTERM, expects a clean exit, and checks nothing leaked and no pass
// failed: these scenarios inject no fault, so a failed pass (and the backoff that stalls the
// target's launches) is a defect. Seen: cleanup of a runner whose shim had written its exit status
// but not yet exited failed the pass with "remove runtime directory ...: runner is still running".
func stopClean(t *testing.T, d *harness.Daemon, sim *harness.Sim) {
	t.Helper()
	for _, l := range harness.Records(d.Logs(), harness.OfKind("backoff")) {
		t.Errorf("a reconcile pass failed in a fault-free run: %s", l.Raw)
	}
	d.Signal(syscall.SIGTERM)
	if code, out := d.Wait(t, 30*time.Second); code != 0 {
		t.Errorf("daemon exited %d after SIGTERM; stdout:\n%s", code, out)
	}
	harness.AssertNoBusyKilled(t, sim, d.StateDir)
	harness.AssertNoLeaks(t, sim, d.StateDir)
}

// holds fails the test unless cond stays true for the whole window (sampled every PollEvery):
// for promises about a steady state, such as min_idle runners staying warm.
func holds(t *testing.T, window time.Duration, what string, cond func() bool) {
	t.Helper()
	if harness.Poll(window, func() bool { return !cond() }) {
		t.Fatalf("%s stopped holding within %s", what, window)
	}
}
