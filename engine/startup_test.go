package engine

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

var timedOutHistory = []journal.State{journal.StatePlanned, journal.StateRegistered, journal.StateStarted,
	journal.StateFailed, journal.StateDeregistered, journal.StateCleaned}

// Issue 15.1: a runner GitHub never lists online is no idle supply forever: at startup_timeout it
// is deregistered, stopped, recorded failed (registration_timed_out), and replaced. It keeps its
// capacity slot until it is stopped, so with max_runners = 1 the replacement starts a pass later.
func TestRunnerThatNeverComesOnlineIsReplaced(t *testing.T) {
	h := newHarness(t)
	a := baseTarget("a")
	a.MaxRunners = 1
	h.w.allOffline = true // the host cannot reach GitHub
	h.w.setQueued("repo:acme/a", 1)
	h.begin(cfgOf(a))
	first := h.j.All()[0].ID
	for range 9 { // 4m30s: not yet
		h.tick(poll, 1, "a")
	}
	if got := h.byState("a"); got["started"] != 1 || len(h.j.All()) != 1 {
		t.Fatalf("before startup_timeout: %v", got)
	}
	h.tick(poll, 1, "a") // 5m after the start record
	if st := h.s.Status().Targets[0]; st.Idle != 0 || st.Failures[ReasonRegistrationTimedOut] != 1 {
		t.Fatalf("status at the timeout: idle %d, failures %v", st.Idle, st.Failures)
	}
	if got := h.byState("a"); got["deregistered"] != 1 || len(h.j.All()) != 1 {
		t.Fatalf("at the timeout: %v, want it deregistered and stopping, holding the only slot", got)
	}
	if evs := h.events(ReasonRegistrationTimedOut); len(evs) == 0 || evs[0].Kind != EventFailed {
		t.Fatalf("no failed event naming the reason: %v", evs)
	}
	h.w.mu.Lock()
	h.w.allOffline = false // the replacement can connect
	h.w.mu.Unlock()
	h.tick(poll, 1, "a")
	if got := h.j.History(first); !reflect.DeepEqual(got, timedOutHistory) {
		t.Fatalf("timed-out runner went %v, want %v", got, timedOutHistory)
	}
	if a, _ := h.j.Get(h.deadline(), first); !strings.HasPrefix(a.Reason, ReasonRegistrationTimedOut+": ") {
		t.Fatalf("reason = %q", a.Reason)
	}
	if got := h.byState("a"); got["started"] != 1 {
		t.Fatalf("after the slot was freed: %v, want the replacement started", got)
	}
	if n := h.w.takeJobs("repo:acme/a"); n != 1 {
		t.Fatal("the replacement did not take the job")
	}
	h.tick(poll, 1, "a")
	if got := h.byState("a"); got["busy"] != 1 {
		t.Fatalf("after the job was taken: %v", got)
	}
	h.w.checkPromises()
}

// A runner that was online and is listed offline while idle for startup_timeout is replaced too;
// one that GitHub says took a job when it is given up on is left to finish.
func TestRunnerOfflineWhileIdleIsReplacedUnlessItTookAJob(t *testing.T) {
	h, _ := startAWith(t, 0, func(a *config.Target) { a.MinIdle = 2 })
	h.tick(poll, 1, "a") // both seen online
	h.w.mu.Lock()
	h.w.allOffline = true
	var names []string
	for _, r := range h.w.sortedRegs() {
		names = append(names, r.name)
	}
	h.w.regs[h.regID(names[1])].busy = true // took a job GitHub's list does not show yet
	h.w.hideBusy = true
	h.w.mu.Unlock()
	for range 10 { // offline for 5 min after it was last listed online
		h.tick(poll, 1, "a")
	}
	states := map[string]journal.State{}
	for _, at := range h.j.All() {
		states[at.RunnerName] = at.State
	}
	if states[names[0]] != journal.StateDeregistered || states[names[1]] != journal.StateBusy {
		t.Fatalf("after 5 min offline: %v, want the idle one given up on and the busy one left", states)
	}
	if alive, _ := h.w.counts("repo:acme/a"); alive < 1 {
		t.Fatal("the busy runner was stopped")
	}
	h.w.checkPromises()
}

func (h *harness) regID(name string) int64 {
	for id, r := range h.w.regs {
		if r.name == name {
			return id
		}
	}
	h.t.Fatalf("no registration %s", name)
	return 0
}

// The same for a registered runner whose package and process do not start within startup_timeout.
func TestRunnerThatDoesNotStartInTimeIsAbandoned(t *testing.T) {
	h := newHarness(t)
	h.w.holdPrepare = true
	h.w.setQueued("repo:acme/a", 1)
	h.apply(cfgOf(baseTarget("a")))
	h.run()
	h.settleTimers(1) // the startup_timeout of the launch, held in Prepare
	h.clock.Advance(5 * time.Minute)
	h.waitPass("a", 0)
	at := h.j.All()[0]
	want := []journal.State{journal.StatePlanned, journal.StateRegistered, journal.StateFailed, journal.StateDeregistered, journal.StateCleaned}
	if got := h.j.History(at.ID); !reflect.DeepEqual(got, want) || !strings.HasPrefix(at.Reason, ReasonRegistrationTimedOut+": ") {
		t.Fatalf("went %v with reason %q, want %v with %s", got, at.Reason, want, ReasonRegistrationTimedOut)
	}
	if st := h.s.Status().Targets[0]; st.Failures[ReasonRegistrationTimedOut] != 1 {
		t.Fatalf("failures = %v", st.Failures)
	}
	h.w.checkPromises()
}
