package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// twoRunnersOneBusy starts target a with one busy and one idle runner, GitHub having seen the job.
func twoRunnersOneBusy(t *testing.T) *harness {
	h := startA(t, 2)
	h.w.setQueued("repo:acme/a", 1)
	h.w.takeJobs("repo:acme/a")
	h.tick(poll, 1, "a")
	if got := h.byState("a"); got["busy"] != 1 || got["started"] != 1 {
		t.Fatalf("setup: %v", got)
	}
	return h
}

func TestShutdownIsBoundedAndLeavesBusyRunners(t *testing.T) {
	h := twoRunnersOneBusy(t)
	done := make(chan ShutdownReport, 1)
	before := h.passCount("a")
	go func() {
		rep, err := h.s.Shutdown(context.Background())
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		done <- rep
	}()
	h.waitPass("a", before) // the drain pass: idle deregistered and stopped
	h.tick(time.Second, 2, "a")
	if got := h.byState("a"); got["busy"] != 1 || got["cleaned"] != 1 {
		t.Fatalf("during the drain: %v", got)
	}
	h.clock.Advance(60 * time.Second) // the drain bound (shutdown_drain_timeout)
	rep := await(h, done, "Shutdown did not return at its bound")
	if !rep.TimedOut || rep.Left != 1 || rep.LeftBusy != 1 {
		t.Fatalf("report = %+v, want the busy runner left for recovery", rep)
	}
	if err := <-h.runDone; err != nil {
		t.Fatalf("Run after Shutdown: %v", err)
	}
	h.cancel = nil
	if alive, busy := h.w.counts("repo:acme/a"); alive != 1 || busy != 1 {
		t.Fatal("shutdown touched the busy runner")
	}
	h.w.checkPromises()
}

func TestShutdownReturnsAsSoonAsDrained(t *testing.T) {
	h := startA(t, 1)
	if rep := h.shutdownDrained("Shutdown did not return once drained"); rep.TimedOut || rep.Left != 0 {
		t.Fatalf("report = %+v", rep)
	}
	h.joinRun()
	h.w.checkPromises()
}

func TestUpgradeDrainCompletesWhileGitHubIsUnreachable(t *testing.T) {
	h := startA(t, 1)
	h.w.takeJobs("repo:acme/a")
	h.tick(poll, 1, "a")
	h.w.setFail("repo:acme/a", errOffline)

	before := h.passCount("a")
	done := h.upgradeDrainAsync()
	h.waitPass("a", before)
	h.settle(2) // the loop's drain poll and the upgrade's journal poll
	h.clock.Advance(time.Second)
	h.settle(2)
	notYet(h, done, "upgrade finished with a job running")
	// The runner crashes mid-job (a runner that ended 0 after its job would owe GitHub nothing:
	// TestRunnerThatEndedOnItsOwnIsNotDeleted); GitHub is still unreachable.
	h.w.exitRunners("repo:acme/a", 1)
	h.poke("a", 2)
	h.clock.Advance(time.Second)
	if err := await(h, done, "upgrade drain did not complete from the journal's count"); err != nil {
		t.Fatalf("UpgradeDrain: %v", err)
	}
	if got := h.byState("a"); got["exited"] != 1 {
		t.Fatalf("the exited runner still owes its deregistration: %v", got)
	}
}

func TestShutdownSupersedesUpgradeDrain(t *testing.T) {
	h := twoRunnersOneBusy(t)
	upgrade := h.upgradeDrainAsync()
	h.settle(2)
	shutdown := h.shutdownAsync()
	if err := await(h, upgrade, "the upgrade drain kept waiting after Shutdown"); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("UpgradeDrain = %v, want ErrSuperseded", err)
	}
	h.settle(2) // the loop and the shutdown bound
	h.clock.Advance(60 * time.Second)
	rep := <-shutdown
	if rep.LeftBusy != 1 {
		t.Fatalf("report = %+v", rep)
	}
	h.joinRun()
	h.w.checkPromises()
}

func TestCapacityNeverExceededUnderConcurrentTargets(t *testing.T) {
	h := newHarness(t)
	var targets []config.Target
	for i := range 20 {
		tg := baseTarget(fmt.Sprintf("t%02d", i))
		tg.MaxRunners = 2
		targets = append(targets, tg)
		h.w.setQueued("repo:acme/"+tg.Name, 5)
	}
	cfg := cfgOf(targets...)
	cfg.Daemon.MaxRunners = 7
	h.apply(cfg)
	h.run()
	names := make([]string, len(targets))
	for i, tg := range targets {
		names[i] = tg.Name
		h.waitPass(tg.Name, 0)
	}
	for range 6 { // jobs run and finish in waves; slots free and are leased again
		for _, tg := range targets {
			h.w.takeJobs("repo:acme/" + tg.Name)
		}
		h.tick(poll, 20, names...)
		for _, tg := range targets {
			h.w.finishJobs("repo:acme/" + tg.Name)
			h.w.setQueued("repo:acme/"+tg.Name, 5)
		}
		h.tick(poll, 20, names...)
	}
	h.w.mu.Lock()
	maxRunning, maxPer, starts := h.w.maxRunning, h.w.maxPer, len(h.w.starts)
	h.w.mu.Unlock()
	if maxRunning > 7 || h.j.MaxHostLive() > 7 {
		t.Fatalf("host capacity exceeded: %d runners, %d live attempts at once (max 7)", maxRunning, h.j.MaxHostLive())
	}
	for name, n := range maxPer {
		if n > 2 {
			t.Fatalf("target %s ran %d runners at once (max 2)", name, n)
		}
	}
	if maxRunning != 7 || starts < 30 {
		t.Fatalf("capacity was not used: max %d at once, %d starts", maxRunning, starts)
	}
	h.w.checkPromises()
}

func TestOfflineTargetDoesNotSlowAHealthyOne(t *testing.T) {
	h := newHarness(t)
	block := make(chan struct{}) // never closed: a's Queued hangs until the run ends
	h.w.block["repo:acme/slow"] = block
	h.w.setQueued("repo:acme/b", 1)
	h.apply(cfgOf(baseTarget("slow"), baseTarget("b")))
	h.run()
	h.waitPass("b", 0)
	h.settle(1) // only b parks; slow is stuck in its call
	for round := 1; round <= 3; round++ {
		h.w.takeJobs("repo:acme/b")
		h.w.finishJobs("repo:acme/b")
		h.w.setQueued("repo:acme/b", 1)
		h.tick(poll, 1, "b")
		h.w.mu.Lock()
		n := len(h.w.starts)
		h.w.mu.Unlock()
		if n != round+1 {
			t.Fatalf("round %d: b started %d runners in total, want %d (one per poll interval)", round, n, round+1)
		}
	}
	if h.passCount("slow") != 0 {
		t.Fatal("the hung target completed a pass")
	}
}

func TestRateLimitedTargetBacksOffUntilResetAlone(t *testing.T) {
	h := newHarness(t)
	reset := h.clock.Now().Add(10 * time.Minute)
	h.w.setFail("repo:acme/a", fmt.Errorf("list runners: %w", rateLimitErr{at: reset}))
	h.begin(cfgOf(baseTarget("a"), baseTarget("b")))
	st := h.s.Status()
	if st.Targets[0].Backoff != "rate-limited" || st.Targets[0].BackoffUntil.Before(reset) || st.Targets[1].Backoff != "" {
		t.Fatalf("status = %+v", st.Targets)
	}
	calls := h.w.callCount("Runners", "repo:acme/a") + h.w.callCount("Queued", "repo:acme/a")
	h.s.Wake("a") // a webhook delivery does not break a rate-limit backoff
	h.settle(2)
	for range 19 { // b keeps its 30 s rhythm; a asks nothing before the reset
		h.tick(poll, 2, "b")
	}
	if got := h.w.callCount("Runners", "repo:acme/a") + h.w.callCount("Queued", "repo:acme/a"); got != calls {
		t.Fatalf("a called GitHub %d times before its rate-limit reset", got-calls)
	}
	if got := h.w.callCount("Queued", "repo:acme/b"); got < 19 {
		t.Fatalf("b passes during a's backoff = %d", got)
	}
	h.w.setFail("repo:acme/a", nil)
	h.tick(reset.Sub(h.clock.Now())+time.Second, 2, "a", "b")
	if st := h.s.Status(); st.Targets[0].Backoff != "" || st.Targets[0].LastError != "" {
		t.Fatalf("a after the reset: %+v", st.Targets[0])
	}
}

func TestBackoffGrowsByClass(t *testing.T) {
	now := time.Unix(1000, 0)
	var b backoffState
	first := b.next(authErr{}, now, poll, halfRand{})
	second := b.next(authErr{}, now, poll, halfRand{})
	if first != 30*time.Second || second != time.Minute || b.class != "unauthorized" {
		t.Fatalf("unauthorized backoff %s then %s (%s)", first, second, b.class)
	}
	if d := b.next(errOffline, now, poll, halfRand{}); d != 5*time.Second || b.class != "retryable" {
		t.Fatalf("a new class restarts its own sequence: %s (%s)", d, b.class)
	}
	for range 20 {
		b.next(errOffline, now, poll, halfRand{})
	}
	if d := b.next(errOffline, now, poll, halfRand{}); d != 5*time.Minute {
		t.Fatalf("retryable backoff is capped: %s", d)
	}
	b.reset()
	if b.class != "" || !b.until.IsZero() {
		t.Fatal("reset keeps state")
	}
}

func TestCancelledUpgradeDrainResumesLaunching(t *testing.T) {
	h := twoRunnersOneBusy(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	before := h.passCount("a")
	go func() { done <- h.s.UpgradeDrain(ctx) }()
	h.waitPass("a", before)
	h.settle(2)
	if got := h.byState("a"); got["deregistered"]+got["cleaned"] != 1 {
		t.Fatalf("the upgrade drain did not reap the idle runner: %v", got)
	}
	before = h.passCount("a")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("UpgradeDrain = %v", err)
	}
	h.waitPass("a", before)
	h.settle(1)
	h.w.setQueued("repo:acme/a", 2)
	h.poke("a", 1)
	if got := h.byState("a"); got["started"] != 2 {
		t.Fatalf("after the upgrade was called off: %v, want launching again", got)
	}
	h.w.checkPromises()
}

func TestResumeAfterCompletedUpgradeDrainLaunchesAgain(t *testing.T) {
	h := twoRunnersOneBusy(t)
	before := h.passCount("a")
	done := h.upgradeDrainAsync()
	h.waitPass("a", before)
	h.settle(2) // the loop's poll timer and the drain's journal poll
	h.w.finishJobs("repo:acme/a")
	var drained bool
	for i := 0; i < 5 && !drained; i++ {
		h.clock.Advance(time.Second)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("UpgradeDrain = %v", err)
			}
			drained = true
		case <-time.After(2 * time.Second):
		}
	}
	if !drained {
		t.Fatal("the upgrade drain did not complete after the busy runner finished")
	}
	h.settle(0) // the drained loop retired: nothing runs while the handover is pending
	h.w.setQueued("repo:acme/a", 1)
	if got := h.byState("a"); got["started"]+got["registered"]+got["planned"] != 0 {
		t.Fatalf("launched while the handover was pending: %v", got)
	}
	before = h.passCount("a")
	h.s.Resume()
	h.waitPass("a", before)
	h.settle(1)
	if got := h.byState("a"); got["started"] != 1 {
		t.Fatalf("after Resume: %v, want one runner launched for the queued job", got)
	}
	h.w.checkPromises()
}

// A shutdown's drain pass of a loop that owns nothing reads nothing from GitHub: the shutdown's
// sweep covers its registrations, and under a tight governor such reads would hold the loops that
// must conclude ended runners within the drain bound.
func TestShutdownEmptyLoopReadsNothing(t *testing.T) {
	h := newHarness(t)
	h.w.setQueued("repo:acme/a", 1)
	h.begin(cfgOf(baseTarget("a"), baseTarget("b")))
	h.w.takeJobs("repo:acme/a")
	h.tick(poll, 2, "a", "b")
	if got := h.byState("a"); got["busy"] != 1 {
		t.Fatalf("setup: %v", got)
	}
	listed := h.w.callCount("Runners", "repo:acme/b")
	before := h.passCount("b")
	done := h.shutdownAsync()
	h.waitPass("b", before) // b's drain pass: it owns nothing and retires
	h.settle(2)             // a's drain poll and the shutdown bound
	if n := h.w.callCount("Runners", "repo:acme/b"); n != listed {
		t.Errorf("the empty loop's drain pass listed runners %d times, want none", n-listed)
	}
	h.clock.Advance(60 * time.Second) // the bound: a's busy runner is left for recovery
	if rep := await(h, done, "Shutdown did not return at its bound"); !rep.TimedOut || rep.LeftBusy != 1 {
		t.Fatalf("report = %+v, want a's busy runner left", rep)
	}
	h.joinRun()
	h.w.checkPromises()
}

// A registration still waiting for the request governor when a shutdown begins is given up, not
// made during the drain, and, never sent, needs no lookup: the drain ends at once with nothing
// registered or left.
func TestShutdownGivesUpARegistrationStillWaiting(t *testing.T) {
	h := newHarness(t)
	h.w.jitGate, h.w.jitEntered, h.w.jitUnsent = make(chan struct{}), make(chan string, 8), true
	defer close(h.w.jitGate)
	h.w.setQueued("repo:acme/a", 1)
	h.apply(cfgOf(baseTarget("a")))
	h.run()
	<-h.w.jitEntered // the launch waits to register
	done := h.shutdownAsync()
	rep, ok := advanceUntil(h, done, 10)
	if !ok || rep.TimedOut || rep.Left != 0 {
		t.Fatalf("Shutdown = %+v (ended %v), want a drained host well inside the bound", rep, ok)
	}
	h.joinRun()
	if got := h.byState("a"); got[string(journal.StateCleaned)] != 1 || len(got) != 1 {
		t.Fatalf("attempts after the shutdown: %v, want the one given up, cleaned", got)
	}
	if len(h.w.regs) != 0 {
		t.Fatalf("%d registrations made during the shutdown", len(h.w.regs))
	}
	h.w.checkPromises()
}

// oneBusyRunner starts target a with one runner running a job.
func oneBusyRunner(t *testing.T) *harness {
	h := startA(t, 1)
	h.w.takeJobs(idA)
	h.tick(poll, 1, "a")
	if got := h.byState("a"); got["busy"] != 1 {
		t.Fatalf("setup: %v", got)
	}
	return h
}

// drainedInsideTheBound waits for the shutdown begun (done), drain polls passing, and checks that
// it concluded a's one runner well inside the bound; a drain that does not is given the bound, so
// the test ends.
func (h *harness) drainedInsideTheBound(done <-chan ShutdownReport) {
	h.t.Helper()
	rep, ok := advanceUntil(h, done, 5)
	if !ok {
		h.clock.Advance(60 * time.Second)
		rep = <-done
	}
	h.joinRun()
	if rep.TimedOut || rep.Left != 0 {
		h.t.Errorf("report = %+v, want the ended runner concluded well inside the bound", rep)
	}
	if got := h.byState("a"); got["cleaned"] != 1 || len(got) != 1 {
		h.t.Errorf("attempts after the shutdown: %v, want the runner cleaned", got)
	}
	h.w.checkPromises()
}

// A runner whose job ends just after the pass read the runner list exits 0: GitHub removed its
// registration, though the list still names it. The drain concludes it without a DELETE, which
// a request governor at its ceiling (a fleet sharing one, e2e TestFleetSharesOneGitHubCeiling)
// holds for seconds: the pass waited in it past the shutdown bound and left the runner and the
// ones after it for recovery, their runtime directories with them.
func TestDrainConcludesARunnerThatEndedAfterTheList(t *testing.T) {
	h := oneBusyRunner(t)
	h.w.mu.Lock()
	h.w.hang["DeleteRunner "+idA] = true           // held by the governor until the bound
	h.w.afterList = func() { h.w.finishJobs(idA) } // the job ends once the drain's list is read
	h.w.mu.Unlock()
	deletes := h.w.callCount("DeleteRunner", idA)
	h.drainedInsideTheBound(h.shutdownAsync())
	if n := h.w.callCount("DeleteRunner", idA) - deletes; n != 0 {
		t.Errorf("%d DELETEs for a runner GitHub removed when its job ended, want 0", n)
	}
}

// A drain's read of GitHub that the request governor holds back (a fleet stopping at once: the
// host elected as the others resigned lists for them all, at its share of the ceiling) does not
// keep the drain from concluding a runner that ends while it waits: every DrainPoll the loop
// concludes its runners that ended by themselves, which needs nothing of GitHub, and a loop then
// owning nothing stops waiting and retires, well inside the bound.
func TestDrainConcludesEndedRunnersWhileItsReadWaits(t *testing.T) {
	h := oneBusyRunner(t)
	h.w.mu.Lock()
	h.w.hang["Runners "+idA] = true // held by the governor until the bound
	h.w.mu.Unlock()
	lists := h.w.callCount("Runners", idA)
	done := h.shutdownAsync()
	h.waitCalls("Runners", idA, lists)
	h.w.finishJobs(idA) // the job ends while the drain's list read waits: the runner exits 0
	if h.clock.BlockUntil(h.deadline(), 2) != nil {
		t.Errorf("while the drain's read waits, %d timers: the shutdown bound only, none to conclude ended runners", h.clock.Waiters())
	}
	h.drainedInsideTheBound(done)
}

// A drain reaps a runner its list did not show busy; when the runner took a job after all and
// ends (exit 0) while the reap's DELETE waits for the request governor's points (9 s of a 10 s
// bound in e2e TestFleetSharesOneGitHubCeiling), the DELETE is moot: it is cut, and the runner is
// concluded without GitHub, well inside the bound.
func TestDrainReapDoesNotWaitForARunnerThatEnds(t *testing.T) {
	h := startA(t, 1) // one idle runner
	h.w.mu.Lock()
	h.w.hang["DeleteRunner "+idA] = true // held by the governor until the bound
	h.w.mu.Unlock()
	deletes := h.w.callCount("DeleteRunner", idA)
	done := h.shutdownAsync()
	h.waitCalls("DeleteRunner", idA, deletes) // the drain reaps it
	h.w.setQueued(idA, 1)
	h.w.takeJobs(idA)   // it had taken a job,
	h.w.finishJobs(idA) // which ends: GitHub removes it, the process exits 0
	h.drainedInsideTheBound(done)
}
