package engine

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// waitErr waits for an error on ch while fake time advances one drain poll at a time; rounds
// bounds the polls, so a drain that never ends fails instead of hanging.
func (h *harness) advanceUntil(ch <-chan error, rounds int) (error, bool) {
	h.t.Helper()
	return advanceUntil(h, ch, rounds)
}

// advanceUntil advances fake time a second at a time, up to rounds times, until ch answers.
func advanceUntil[T any](h *harness, ch <-chan T, rounds int) (T, bool) {
	h.t.Helper()
	for range rounds {
		select {
		case v := <-ch:
			return v, true
		case <-time.After(200 * time.Millisecond):
		}
		h.clock.Advance(time.Second)
	}
	select {
	case v := <-ch:
		return v, true
	case <-time.After(time.Second):
		var zero T
		return zero, false
	}
}

// waitCalls waits until op was called more than n times for identity (a call that hangs has begun).
func (h *harness) waitCalls(op, identity string, n int) {
	h.t.Helper()
	ctx := h.deadline()
	for h.w.callCount(op, identity) <= n {
		select {
		case <-ctx.Done():
			h.t.Fatalf("%s was not called for %s", op, identity)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (h *harness) events(substr string) []Event {
	var out []Event
	for _, ev := range h.s.Status().Events {
		if strings.Contains(ev.Message, substr) {
			out = append(out, ev)
		}
	}
	return out
}

// Issue 15.12: an ephemeral runner is removed by GitHub when its job ends; deleting it again
// costs budget and secondary-limit points for a 404.
func TestNoDeleteForARunnerGitHubAlreadyRemoved(t *testing.T) {
	h := startA(t, 2)
	h.runJobsOfA()
	if got := h.byState("a"); got["cleaned"] != 2 {
		t.Fatalf("after the jobs: %v", got)
	}
	if n := h.w.callCount("DeleteRunner", "repo:acme/a"); n != 0 {
		t.Fatalf("%d DELETEs for runners GitHub had already removed, want 0", n)
	}
}

// Issue 15.3: a target switched to monitor mode drains what it owns first (idle reaped, busy
// left to finish), then only observes; a disabled monitor target retires.
func TestMonitorModeDrainsWhatItOwnsFirst(t *testing.T) {
	h, a := startAWith(t, 1, func(a *config.Target) { a.MinIdle = 1 })
	h.w.takeJobs("repo:acme/a")
	h.tick(poll, 1, "a")
	if got := h.byState("a"); got["busy"] != 1 || got["started"] != 1 {
		t.Fatalf("setup: %v, want one busy and one warm idle runner", got)
	}
	a.Mode = "monitor"
	before := h.passCount("a")
	h.apply(cfgOf(a))
	h.waitPass("a", before)
	h.tick(poll, 1, "a")
	if got := h.byState("a"); got["busy"] != 1 || got["cleaned"] != 1 || got["started"] != 0 {
		t.Fatalf("in monitor mode: %v, want the idle runner reaped and the busy one left", got)
	}
	if alive, busy := h.w.counts("repo:acme/a"); alive != 1 || busy != 1 {
		t.Fatalf("monitor mode touched the busy runner: alive %d busy %d", alive, busy)
	}
	h.w.setQueued("repo:acme/a", 3)
	h.tick(poll, 1, "a")
	if n := h.w.callCount("JITConfig", "repo:acme/a"); n != 2 {
		t.Fatalf("monitor mode launched: %d registrations in all, want the 2 from before", n)
	}
	h.w.finishJobs("repo:acme/a")
	a.Enabled = new(bool) // disabled
	before = h.passCount("a")
	h.apply(cfgOf(a))
	h.waitPass("a", before)
	h.settle(0) // the loop concluded the finished runner and retired
	if got := h.byState("a"); got["cleaned"] != 2 {
		t.Fatalf("disabled monitor target: %v", got)
	}
	h.w.checkPromises()
}

// Issue 15.4: an upgrade drain that begins while a pass launches stops the launches after the
// one under way, and does not report the host empty while that launch runs.
func TestUpgradeDrainWaitsForALaunchUnderWayAndStopsTheRest(t *testing.T) {
	h := newHarness(t)
	h.w.jitGate, h.w.jitEntered = make(chan struct{}), make(chan string, 8)
	h.w.setQueued("repo:acme/a", 3)
	h.apply(cfgOf(baseTarget("a")))
	h.run()
	<-h.w.jitEntered // the first of three launches is registering
	done := h.upgradeDrainAsync()
	h.settleTimers(1) // the upgrade's journal poll; the loop is inside its launch
	h.clock.Advance(time.Second)
	h.settleTimers(1)
	notYet(h, done, "the upgrade drain ended while a launch was under way")
	close(h.w.jitGate)
	if err, ok := h.advanceUntil(done, 10); !ok || err != nil {
		t.Fatalf("UpgradeDrain = %v (ended %v), want nil once the launched runner was reaped", err, ok)
	}
	if n := h.w.callCount("JITConfig", "repo:acme/a"); n != 1 {
		t.Fatalf("%d registrations, want 1: launches went on after the drain began", n)
	}
	if got := h.byState("a"); got["started"]+got["planned"]+got["registered"] != 0 {
		t.Fatalf("after the upgrade drain: %v", got)
	}
	h.w.checkPromises()
}

// Issue 15.9: a journal that cannot be read during an upgrade drain is "unknown": keep waiting.
func TestUpgradeDrainKeepsWaitingWhileTheJournalIsUnreadable(t *testing.T) {
	h := startA(t, 1)
	h.w.takeJobs("repo:acme/a")
	h.tick(poll, 1, "a")
	var broken atomic.Bool
	h.j.Fail = func(op string) error {
		if op == "live" && broken.Load() {
			return errors.New("pebble: disk I/O error")
		}
		return nil
	}
	broken.Store(true)
	done := h.upgradeDrainAsync()
	if err, ended := h.advanceUntil(done, 3); ended {
		t.Fatalf("UpgradeDrain ended with %v while the journal was unreadable, want it to keep waiting", err)
	}
	if len(h.events("cannot read the journal")) != 1 {
		t.Fatalf("the unreadable journal is not reported once: %v", h.events("journal"))
	}
	broken.Store(false)
	if err, ended := h.advanceUntil(done, 3); ended {
		t.Fatalf("UpgradeDrain ended with %v while a job runs", err)
	}
	h.w.finishJobs("repo:acme/a")
	if err, ended := h.advanceUntil(done, 20); !ended || err != nil {
		t.Fatalf("UpgradeDrain = %v (ended %v) after the job finished", err, ended)
	}
}

// Issue 15.10: a retried registration that GitHub answers 409 (the first try landed) is found by
// name and deleted; the target does not back off as if GitHub refused it.
func TestRegistrationConflictIsFoundByNameWithoutBackoff(t *testing.T) {
	h := newHarness(t)
	h.w.nameTaken[journal.RunnerNamePrefix+testHost+"-0000000001"] = true
	h.w.setQueued("repo:acme/a", 1)
	h.begin(cfgOf(baseTarget("a")))
	if st := h.s.Status().Targets[0]; st.Backoff != "" || st.LastError != "" {
		t.Fatalf("status after a conflict: backoff %q, error %q", st.Backoff, st.LastError)
	}
	h.tick(poll, 1, "a") // the next pass on the normal rhythm, not a backoff
	all := h.j.All()
	if len(all) != 2 {
		t.Fatalf("attempts = %+v, want the conflicted one and its replacement", all)
	}
	want := []journal.State{journal.StatePlanned, journal.StateFailed, journal.StateDeregistered, journal.StateCleaned}
	if got := h.j.History(all[0].ID); !reflect.DeepEqual(got, want) {
		t.Fatalf("conflicted attempt went %v, want %v", got, want)
	}
	if got := h.byState("a"); got["started"] != 1 {
		t.Fatalf("the replacement did not start on the next pass: %v", got)
	}
	h.w.mu.Lock()
	regs := len(h.w.regs)
	h.w.mu.Unlock()
	if regs != 1 {
		t.Fatalf("registrations = %d, want only the replacement's", regs)
	}
}

// Issue 15.2: with the credential refused, an upgrade does not wait for GitHub to deregister an
// idle runner: it is left running for the next daemon's recovery, as a stop leaves it.
func TestUpgradeDrainLeavesIdleRunnersGitHubWillNotDeregister(t *testing.T) {
	h, _ := startAWith(t, 0, func(a *config.Target) { a.MinIdle = 1 })
	h.w.setFail("repo:acme/a", authErr{})
	done := h.upgradeDrainAsync()
	if err, ended := h.advanceUntil(done, 10); !ended || err != nil {
		t.Fatalf("UpgradeDrain = %v (ended %v), want it to complete while GitHub refuses the credential", err, ended)
	}
	if got := h.byState("a"); got["started"] != 1 {
		t.Fatalf("the idle runner was not left as it was: %v", got)
	}
	if alive, _ := h.w.counts("repo:acme/a"); alive != 1 {
		t.Fatal("an idle runner GitHub did not deregister was stopped")
	}
	h.w.checkPromises()
}

// Issue 15.5: a planned attempt left by a crash keeps its slot until a lookup by name made at
// least the call timeout after its planned record finds nothing; a registration that lands late
// is deleted.
func TestPlannedAttemptWaitsForALateRegistration(t *testing.T) {
	h := newHarness(t)
	a := baseTarget("a")
	late := journal.Attempt{ID: "h1-7", Target: "a", Policy: fingerprint(a), RunnerName: journal.RunnerNamePrefix + "h1-7",
		State: journal.StatePlanned, CreatedAt: h.clock.Now(), UpdatedAt: h.clock.Now()}
	never := late
	never.ID, never.RunnerName, never.Slot = "h1-8", journal.RunnerNamePrefix+"h1-8", 1
	h.j.Put(late)
	h.j.Put(never)
	h.begin(cfgOf(a))
	if got := h.byState("a"); got["planned"] != 2 {
		t.Fatalf("after the first pass: %v, want both planned attempts kept", got)
	}
	h.w.mu.Lock() // the request GitHub was still processing at the crash lands now
	h.w.regs[555] = &ghRunner{id: 555, name: late.RunnerName, identity: "repo:acme/a"}
	h.w.mu.Unlock()
	h.tick(poll, 1, "a")
	if got := h.j.History("h1-7"); !reflect.DeepEqual(got, []journal.State{journal.StatePlanned, journal.StateCleaned}) {
		t.Fatalf("late registration: %v", got)
	}
	h.w.mu.Lock()
	_, leaked := h.w.regs[555]
	h.w.mu.Unlock()
	if leaked {
		t.Fatal("the late registration was not deleted")
	}
	if got := h.j.History("h1-8"); len(got) != 1 {
		t.Fatalf("the other attempt was dropped %s after planning, before the call timeout: %v", poll, got)
	}
	for range 4 { // 2m30s after the planned record: past the call timeout
		h.tick(poll, 1, "a")
	}
	if got := h.j.History("h1-8"); !reflect.DeepEqual(got, []journal.State{journal.StatePlanned, journal.StateCleaned}) {
		t.Fatalf("after the call timeout: %v", got)
	}
}

// Issue 15.5: a clean shutdown ends with a last sweep of this host's registrations, so a request
// answered after its attempt was concluded does not stay registered after the exit. The sweep
// reads the targets this run sent a request to whose answer it did not journal (issue 28 item 4):
// here a 409 says an earlier try of a's first registration landed.
func TestCleanShutdownSweepsThisHostsRegistrations(t *testing.T) {
	h := newHarness(t)
	h.w.nameTaken["runner-manager-h1-0000000001"] = true
	h.w.setQueued(idA, 1)
	h.begin(cfgOf(baseTarget("a")))
	var landed atomic.Bool
	counted := h.s.afterPass
	h.s.afterPass = func(k loopKey) {
		if h.s.draining() && !landed.Swap(true) {
			h.w.mu.Lock() // lands after the loop's drain pass, so no loop sees it
			h.w.regs[777] = &ghRunner{id: 777, name: "runner-manager-h1-0000000099", identity: "repo:acme/a"}
			h.w.regs[778] = &ghRunner{id: 778, name: "runner-manager-h2-0000000001", identity: "repo:acme/a"}
			h.w.mu.Unlock()
		}
		counted(k)
	}
	rep, err := h.s.Shutdown(context.Background())
	if err != nil || rep.TimedOut {
		t.Fatalf("Shutdown = %+v, %v", rep, err)
	}
	h.joinRun()
	h.w.mu.Lock()
	_, ours := h.w.regs[777]
	_, theirs := h.w.regs[778]
	h.w.mu.Unlock()
	if !landed.Load() || ours || !theirs {
		t.Fatalf("after a clean stop: landed %v, ours still registered %v, other host's kept %v", landed.Load(), ours, theirs)
	}
}

// shutdownWhileHanging makes op hang for target a, stops, and returns the report once the bound
// passed; a Shutdown that overruns the bound fails the test.
func (h *harness) shutdownWhileHanging(op string) ShutdownReport {
	h.t.Helper()
	h.w.mu.Lock()
	h.w.hang[op+" repo:acme/a"] = true
	h.w.mu.Unlock()
	calls := h.w.callCount(op, "repo:acme/a")
	done := h.shutdownAsync()
	h.waitCalls(op, "repo:acme/a", calls)
	// The shutdown bound, and while a read hangs the drain's look for ended runners (loop.read).
	timers := 1
	if op == "Runners" {
		timers = 2
	}
	h.settle(timers)
	h.clock.Advance(60 * time.Second)
	var rep ShutdownReport
	select {
	case rep = <-done:
	case <-time.After(5 * time.Second):
		h.t.Fatalf("Shutdown overran its bound while %s hung", op)
	}
	h.joinRun()
	if evs := h.events("check the state dir"); len(evs) != 0 {
		h.t.Fatalf("a cancelled call reported as a journal failure: %v", evs)
	}
	return rep
}

// Issue 15.8: with GitHub hanging, cleanup that a stop does not cut short still ends at the
// shutdown bound, and the cancelled calls are not reported as journal failures.
func TestShutdownBoundHoldsWhileGitHubHangs(t *testing.T) {
	h := startA(t, 1)
	h.w.mu.Lock()
	for _, fp := range h.w.procs { // the runner crashed: it owes its deregistration
		h.w.endLocked(fp, 1)
	}
	h.w.mu.Unlock()
	if rep := h.shutdownWhileHanging("DeleteRunner"); !rep.TimedOut || rep.Left != 1 {
		t.Fatalf("report = %+v", rep)
	}
}

// Issue 15.8: a pass whose list call hangs ends at the bound without a journal-failure report.
func TestShutdownCancellationIsNotAJournalFailure(t *testing.T) {
	h := startA(t, 1) // an idle runner to deregister: a loop that owns nothing reads nothing
	if rep := h.shutdownWhileHanging("Runners"); !rep.TimedOut {
		t.Fatalf("report = %+v", rep)
	}
}

type partialErr string

func (e partialErr) Error() string { return string(e) }
func (partialErr) Partial() bool   { return true }

// Issue 15.6: demand read in part (a repository refused) is served, not backed off, and the
// skipped repository is named in status and in one event until it clears.
func TestPartialDemandIsServedAndNamed(t *testing.T) {
	h := newHarness(t)
	const warn = "target acme: skipped 1 repositories whose jobs cannot be read (acme/secret)"
	h.w.partial["repo:acme/a"] = partialErr(warn)
	h.w.setQueued("repo:acme/a", 2)
	h.begin(cfgOf(baseTarget("a")))
	st := h.s.Status().Targets[0]
	if got := h.byState("a"); got["started"] != 2 {
		t.Fatalf("jobs of the readable repositories: %v, want 2 started", got)
	}
	if st.Backoff != "" || st.LastError != "" || st.Warning != warn {
		t.Fatalf("status: backoff %q, error %q, warning %q", st.Backoff, st.LastError, st.Warning)
	}
	h.tick(poll, 1, "a")
	if evs := h.events("acme/secret"); len(evs) != 1 || evs[0].Kind != EventDemandPartial {
		t.Fatalf("events naming the skipped repository: %v, want one", evs)
	}
	h.w.mu.Lock()
	delete(h.w.partial, "repo:acme/a")
	h.w.mu.Unlock()
	h.tick(poll, 1, "a")
	if st := h.s.Status().Targets[0]; st.Warning != "" || len(h.events("can be read again")) != 1 {
		t.Fatalf("after it cleared: warning %q", st.Warning)
	}
}

// Issue 15.11: a busy runner's job is journaled (`runner-manager runners` shows it), and a job
// in progress is no demand.
func TestBusyRunnerRecordsItsJob(t *testing.T) {
	h := startA(t, 1)
	h.w.takeJobs("repo:acme/a")
	h.tick(poll, 1, "a")
	var busy journal.Attempt
	for _, at := range h.j.All() {
		if at.State == journal.StateBusy {
			busy = at
		}
	}
	if busy.ID == "" || busy.JobID != 9000+busy.RunnerID {
		t.Fatalf("busy attempt %+v, want job id %d", busy, 9000+busy.RunnerID)
	}
	if st := h.s.Status().Targets[0]; st.Demand != 0 || len(h.j.All()) != 1 {
		t.Fatalf("a job in progress counted as demand: %d, attempts %d", st.Demand, len(h.j.All()))
	}
}

// A pass whose GitHub reads took its whole call timeout (the request governor made them wait)
// still reads the journal and launches: the deadline bounds GitHub calls, and its expiry is not a
// state dir that fails ("read journal ...: context deadline exceeded; check the state dir" and a
// backoff, seen in the crash suite).
func TestSlowGitHubReadIsNotAJournalFailure(t *testing.T) {
	h := newHarness(t)
	h.callTimeout = 20 * time.Millisecond // real time: the fake Queued answers when it has passed
	h.s = h.newSupervisor()
	h.w.late["repo:acme/a"] = true
	h.w.setQueued("repo:acme/a", 1)
	h.begin(cfgOf(baseTarget("a")))
	if evs := h.events("read journal"); len(evs) > 0 {
		t.Fatalf("a slow GitHub read was reported as a journal failure: %q", evs[0].Message)
	}
	if got := h.byState("a"); got["started"] != 1 {
		t.Fatalf("attempts after the slow pass: %v, want 1 started", got)
	}
}
