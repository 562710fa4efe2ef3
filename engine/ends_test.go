package engine

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

var endedHistory = []journal.State{journal.StatePlanned, journal.StateRegistered, journal.StateStarted, journal.StateBusy,
	journal.StateFailed, journal.StateDeregistered, journal.StateCleaned}

// busyA runs target a with one runner that took its job, max_job_duration bound (0: off).
func busyA(t *testing.T, bound time.Duration, deaf bool) (*harness, string) {
	t.Helper()
	h := newHarness(t)
	a := baseTarget("a")
	a.MaxRunners, a.MaxJobDuration = 1, config.Duration(bound)
	h.w.setQueued(idA, 1)
	h.begin(cfgOf(a))
	first := h.j.All()[0]
	if deaf {
		h.w.mu.Lock()
		h.w.deaf[first.RunnerName] = true // a hung job: SIGTERM does nothing
		h.w.mu.Unlock()
	}
	if h.w.takeJobs(idA) != 1 {
		t.Fatal("setup: the runner took no job")
	}
	h.tick(poll, 1, "a")
	if got := h.byState("a"); got["busy"] != 1 {
		t.Fatalf("setup: %v, want one busy runner", got)
	}
	return h, first.ID
}

// ended checks that attempt id went busy -> failed(reason) -> deregistered -> cleaned, and that
// status and the events name the reason.
func (h *harness) ended(id, reason string) {
	h.t.Helper()
	if got := h.j.History(id); !reflect.DeepEqual(got, endedHistory) {
		h.t.Fatalf("the runner went %v, want %v", got, endedHistory)
	}
	if a, _ := h.j.Get(h.deadline(), id); !strings.HasPrefix(a.Reason, reason+": ") {
		h.t.Fatalf("reason = %q, want %s: ...", a.Reason, reason)
	}
	if st := h.s.Status().Targets[0]; st.Failures[reason] != 1 {
		h.t.Fatalf("status failures = %v, want %s: 1", st.Failures, reason)
	}
	if evs := h.events(reason + ": "); len(evs) == 0 || evs[0].Kind != EventFailed {
		h.t.Fatalf("no failed event naming %s: %v", reason, evs)
	}
	h.w.checkPromises()
}

// Issue 30 item 1: a runner busy for max_job_duration is recorded failed, stopped, and once its
// process has ended deregistered (GitHub still lists it busy: it fails the job first) and cleaned;
// a moment before the bound it is left alone.
func TestBusyRunnerPastMaxJobDurationIsEnded(t *testing.T) {
	h, id := busyA(t, 10*time.Minute, false)
	for range 19 { // 9m30s busy: not yet
		h.tick(poll, 1, "a")
	}
	if got := h.byState("a"); got["busy"] != 1 {
		t.Fatalf("before max_job_duration: %v", got)
	}
	if alive, _ := h.w.counts(idA); alive != 1 {
		t.Fatal("the runner was stopped before max_job_duration")
	}
	h.tick(poll, 1, "a") // 10m busy
	if alive, busy := h.w.counts(idA); alive != 0 || busy != 1 {
		t.Fatalf("at max_job_duration: %d alive, %d busy registrations; want it stopped, GitHub still listing it busy", alive, busy)
	}
	h.tick(poll, 1, "a")
	h.ended(id, ReasonMaxJobDuration)
	if n := h.w.kills[h.j.All()[0].RunnerName]; n != 0 {
		t.Fatalf("a runner that obeyed its stop was killed %d times", n)
	}
}

// With max_job_duration off (0s) a busy runner is kept however long it runs.
func TestMaxJobDurationOffKeepsABusyRunner(t *testing.T) {
	h, _ := busyA(t, 0, false)
	h.tick(200*time.Hour, 1, "a")
	if got := h.byState("a"); got["busy"] != 1 {
		t.Fatalf("after 200h with max_job_duration off: %v", got)
	}
	h.w.checkPromises()
}

// A hung runner ignores its stop: killGrace after it, it is killed, then concluded.
func TestHungRunnerIsKilled(t *testing.T) {
	h, id := busyA(t, 10*time.Minute, true)
	h.tick(10*time.Minute, 1, "a") // stopped: it ignores SIGTERM
	name := h.j.All()[0].RunnerName
	if alive, _ := h.w.counts(idA); alive != 1 || h.w.stops[name] != 1 {
		t.Fatalf("after the stop: %d alive, %d stops", alive, h.w.stops[name])
	}
	h.tick(poll, 1, "a") // the next pass is past killGrace (decide's table pins the bound itself)
	if h.w.kills[name] != 1 {
		t.Fatalf("%d kills at killGrace after the stop, want 1", h.w.kills[name])
	}
	h.tick(poll, 1, "a")
	h.ended(id, ReasonMaxJobDuration)
}

// Issue 30 item 2: a busy runner whose process lives on after GitHub stopped listing it (its job
// completed, or its registration was deleted) is ended once that has lasted startup_timeout,
// from the lists the passes read anyway: no request of its own. A runner that GitHub lists again
// within the grace is kept.
func TestGhostRunnerIsEnded(t *testing.T) {
	h, id := busyA(t, 0, false)
	lists := h.w.callCount("Runners", idA)
	h.w.forgetRunners(idA)
	for range 9 { // 4m30s: within the grace
		h.tick(poll, 1, "a")
	}
	if got := h.byState("a"); got["busy"] != 1 {
		t.Fatalf("within the grace: %v", got)
	}
	for range 6 { // a list is read every listEvery passes: the mark is at most that late
		h.tick(poll, 1, "a")
	}
	h.tick(poll, 1, "a")
	h.tick(poll, 1, "a")
	h.ended(id, ReasonGhost)
	if got, most := h.w.callCount("Runners", idA)-lists, 16/listEvery+3; got > most {
		t.Fatalf("%d list reads over 16 passes, want at most %d: ghosts are found from the lists passes read anyway", got, most)
	}
}

// A scale set's JobCompleted (or a webhook's completed delivery) for a runner still alive marks
// it a ghost without any list.
func TestGhostByCompletedDelivery(t *testing.T) {
	h, id := busyA(t, 0, false)
	name := h.j.All()[0].RunnerName
	h.w.mu.Lock()
	h.w.hideBusy = true // and the lists still show the registration (no list evidence)
	h.w.mu.Unlock()
	h.s.Deliver(JobEvent{Action: "completed", Job: Job{ID: 77, Runner: name}}, []string{"a"})
	for range 11 {
		h.tick(poll, 1, "a")
	}
	h.tick(poll, 1, "a")
	h.ended(id, ReasonGhost)
}

// A runner seen in GitHub's list again (busy) is no ghost: the grace starts over.
func TestGhostMarkClearedWhenListedAgain(t *testing.T) {
	l := &loop{}
	tg := baseTarget("a")
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	a := journal.Attempt{ID: "h1-1", State: journal.StateBusy, UpdatedAt: t0.Add(-time.Minute)}
	p := Process{PID: 1, StartTime: 1}
	gone := observation{Process: p, HasProcess: true, Alive: true, ListKnown: true, ListAt: t0}
	listed := gone
	listed.Listed, listed.ListedBusy = true, true
	noList := observation{Process: p, HasProcess: true, Alive: true}
	grace := 5 * time.Minute
	// A list read before the busy record proves nothing (it may predate the registration).
	if l.ghostSince(tg, a, observation{Process: p, HasProcess: true, Alive: true, ListKnown: true, ListAt: t0.Add(-2 * time.Minute)}, t0.Add(time.Hour)) || len(l.ghosts) != 0 {
		t.Fatal("a list older than the busy record marked a ghost")
	}
	steps := []struct {
		o    observation
		at   time.Duration
		want bool
	}{
		{gone, 0, false},
		{noList, grace - time.Second, false}, // no list: the mark stands
		{noList, grace, true},
		{listed, grace + time.Second, false}, // listed again: cleared
		{gone, grace + 2*time.Second, false},
		{gone, 2*grace + 2*time.Second, true},
	}
	for i, s := range steps {
		if got := l.ghostSince(tg, a, s.o, t0.Add(s.at)); got != s.want {
			t.Fatalf("step %d: ghost = %v, want %v", i, got, s.want)
		}
	}
	a.State = journal.StateExited
	l.ghostSince(tg, a, gone, t0.Add(3*grace))
	if len(l.ghosts) != 0 {
		t.Fatalf("an attempt no longer busy kept its mark: %v", l.ghosts)
	}
}

// Issue 30 item 1: an upgrade drain waits for a busy runner at most until max_job_duration ends it.
func TestUpgradeDrainWaitsAtMostMaxJobDuration(t *testing.T) {
	h, id := busyA(t, 10*time.Minute, false)
	done := h.upgradeDrainAsync()
	var err error
	ok := false
	for range int((10*time.Minute + 3*poll) / poll) {
		h.clock.Advance(poll)
		select {
		case err = <-done:
			ok = true
		case <-time.After(100 * time.Millisecond):
		}
		if ok {
			break
		}
	}
	if !ok {
		t.Fatalf("the upgrade drain still waits past max_job_duration: %v", h.byState("a"))
	}
	if err != nil {
		t.Fatalf("upgrade drain: %v", err)
	}
	if a, _ := h.j.Get(h.deadline(), id); !strings.HasPrefix(a.Reason, ReasonMaxJobDuration+": ") || !a.State.Terminal() && a.State != journal.StateDeregistered {
		t.Fatalf("after the drain the runner is %s (%q)", a.State, a.Reason)
	}
	h.w.checkPromises()
}

// An upgrade drain counts a runner stopped for cause as running until its exit is seen: the
// upgrade must not swap while it may still hold its job (TestUpgradeDrainWaitsAtMostMaxJobDuration).
func TestProcessMayRunCountsARunnerStoppedForCause(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    journal.Attempt
		want bool
	}{
		{"busy", journal.Attempt{State: journal.StateBusy, ShimPID: 7}, true},
		{"failed for max_job_duration, stopping", journal.Attempt{State: journal.StateFailed, ShimPID: 7, Reason: ReasonMaxJobDuration + ": runner x ..."}, true},
		{"failed as a ghost, stopping", journal.Attempt{State: journal.StateFailed, ShimPID: 7, Reason: ReasonGhost + ": runner x ..."}, true},
		{"failed for a timeout: deregistered before it is stopped", journal.Attempt{State: journal.StateFailed, ShimPID: 7, Reason: ReasonRegistrationTimedOut + ": ..."}, false},
		{"failed for cause, never started", journal.Attempt{State: journal.StateFailed, Reason: ReasonGhost + ": ..."}, false},
	} {
		if got := processMayRun(tc.a); got != tc.want {
			t.Errorf("%s: processMayRun = %v, want %v", tc.name, got, tc.want)
		}
	}
}
