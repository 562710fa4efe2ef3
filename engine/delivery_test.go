package engine

import (
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/journal"
)

const idA = "repo:acme/a"

func queuedEv(id int64) JobEvent {
	return JobEvent{Action: "queued", Job: Job{ID: id, Labels: []string{"self-hosted", "linux"}}}
}

func jobEv(action string, id int64, runner string) JobEvent {
	return JobEvent{Action: action, Job: Job{ID: id, Labels: []string{"self-hosted", "linux"}, Runner: runner}}
}

// deliver hands ev to targets and waits for the light pass of target name it asks for.
func (h *harness) deliver(ev JobEvent, name string, targets ...string) {
	h.t.Helper()
	h.settle(len(targets))
	before := h.passCount(name)
	h.s.Deliver(ev, targets)
	h.waitPass(name, before)
	h.settle(len(targets))
}

// githubCalls is every call of target a's identity to GitHub, by operation.
func (h *harness) githubCalls() map[string]int {
	out := map[string]int{}
	for _, op := range []string{"Queued", "Runners", "JITConfig", "DeleteRunner"} {
		out[op] = h.w.callCount(op, idA)
	}
	return out
}

func (h *harness) runnerNames(target string, state journal.State) []string {
	var out []string
	for _, a := range h.j.All() {
		if a.Target == target && a.State == state {
			out = append(out, a.RunnerName)
		}
	}
	return out
}

// A queued delivery starts exactly one runner for its job, at once and with no read of GitHub
// (one JIT registration); the same job delivered again (a redelivery, or GitHub's retry under a
// new delivery id) starts none; a second job starts a second runner.
func TestDeliveryStartsExactlyOneRunner(t *testing.T) {
	h := startA(t, 0)
	before := h.githubCalls()
	h.deliver(queuedEv(501), "a", "a")
	calls := h.githubCalls()
	if calls["JITConfig"]-before["JITConfig"] != 1 || calls["Queued"] != before["Queued"] || calls["Runners"] != before["Runners"] {
		t.Fatalf("a queued delivery: calls %v -> %v, want one JITConfig and no read", before, calls)
	}
	if got := len(h.runnerNames("a", journal.StateStarted)); got != 1 {
		t.Fatalf("started runners after one delivery = %d, want 1", got)
	}

	// The duplicate asks for no pass at all.
	passes := h.passCount("a")
	h.s.Deliver(queuedEv(501), []string{"a"})
	h.settle(1)
	if h.passCount("a") != passes || h.githubCalls()["JITConfig"] != calls["JITConfig"] {
		t.Fatalf("a duplicate delivery ran a pass or registered a runner")
	}

	h.deliver(queuedEv(502), "a", "a")
	if got := len(h.runnerNames("a", journal.StateStarted)); got != 2 {
		t.Fatalf("started runners after two distinct jobs = %d, want 2", got)
	}
	if got := h.githubCalls()["JITConfig"] - before["JITConfig"]; got != 2 {
		t.Fatalf("JIT registrations for two jobs = %d, want 2", got)
	}
	h.w.checkPromises()
}

// in_progress and completed deliveries update state without GitHub: the runner is marked busy
// with its job, and once its job completed and its process ended it is concluded without a
// DELETE (GitHub removed the ephemeral registration). A queued redelivery after in_progress is no
// demand; the poll that lists the job in progress launches nothing either.
func TestDeliveryUpdatesStateWithoutGitHub(t *testing.T) {
	h := startA(t, 0)
	h.deliver(queuedEv(7), "a", "a")
	names := h.runnerNames("a", journal.StateStarted)
	if len(names) != 1 {
		t.Fatalf("started runners = %v, want 1", names)
	}
	h.w.setQueued(idA, 1)
	if n := h.w.takeJobs(idA); n != 1 {
		t.Fatalf("GitHub handed %d jobs, want 1", n)
	}
	before := h.githubCalls()
	h.deliver(jobEv("in_progress", 7, names[0]), "a", "a")
	busy := h.j.All()
	for _, a := range busy {
		if a.RunnerName == names[0] && (a.State != journal.StateBusy || a.JobID != 7) {
			t.Fatalf("after in_progress: attempt %s in state %s job %d, want busy with job 7", a.ID, a.State, a.JobID)
		}
	}
	passes := h.passCount("a")
	h.s.Deliver(queuedEv(7), []string{"a"}) // redelivered after it started
	h.settle(1)
	if h.passCount("a") != passes {
		t.Fatal("a queued redelivery of a started job ran a pass")
	}

	h.w.finishJobs(idA)
	h.deliver(jobEv("completed", 7, names[0]), "a", "a")
	if got := h.byState("a"); got[string(journal.StateCleaned)] != 1 || len(h.runnerNames("a", journal.StateBusy)) != 0 {
		t.Fatalf("after completed and exit: states %v, want the attempt cleaned", got)
	}
	after := h.githubCalls()
	for op, n := range after {
		if n != before[op] {
			t.Errorf("%s calls %d -> %d: in_progress and completed must not reach GitHub", op, before[op], n)
		}
	}
	h.tick(30*time.Second, 1, "a")
	if got := h.githubCalls()["JITConfig"]; got != after["JITConfig"] {
		t.Errorf("the poll after the job ran registered %d more runners, want none", got-after["JITConfig"])
	}
	h.w.checkPromises()
}

// A dropped delivery costs latency, never the job: the next poll finds it and starts its runner.
// A delivered job the poll then lists too is one job, not two.
func TestDroppedDeliveryIsCaughtByThePoll(t *testing.T) {
	h := startA(t, 0)
	h.w.setQueued(idA, 1) // job 1, never delivered
	h.tick(30*time.Second, 1, "a")
	if got := len(h.runnerNames("a", journal.StateStarted)); got != 1 {
		t.Fatalf("runners after the poll found an undelivered job = %d, want 1", got)
	}
	passes := h.passCount("a")
	h.s.Deliver(queuedEv(1), []string{"a"}) // late: the poll already has it
	h.settle(1)
	if h.passCount("a") != passes {
		t.Fatal("a delivery of a job the poll already listed ran a pass")
	}
	h.deliver(queuedEv(2), "a", "a")
	h.w.setQueued(idA, 2) // the poll lists jobs 1 and 2
	h.tick(30*time.Second, 1, "a")
	if got := h.githubCalls()["JITConfig"]; got != 2 {
		t.Fatalf("JIT registrations for two jobs seen by poll and delivery = %d, want 2", got)
	}
	h.w.checkPromises()
}

// The poll is the truth for what GitHub had queued when it read: a delivered job it no longer
// lists (taken elsewhere, cancelled) stops being demand.
func TestPollDropsDeliveredJobsGitHubNoLongerQueues(t *testing.T) {
	h := newHarness(t)
	tg := baseTarget("a")
	tg.MaxRunners = 1
	h.begin(cfgOf(tg))
	h.deliver(queuedEv(40), "a", "a")
	h.deliver(queuedEv(41), "a", "a") // at max_runners: waits
	if got := h.githubCalls()["JITConfig"]; got != 1 {
		t.Fatalf("JIT registrations at max_runners 1 = %d, want 1", got)
	}
	h.tick(30*time.Second, 1, "a") // the poll lists nothing queued
	if st := h.s.Status().Targets[0]; st.Demand != 0 {
		t.Fatalf("demand after a poll listing nothing = %d, want 0", st.Demand)
	}
}

// A queued job both targets could take is demand for one of them only.
func TestDeliveryToOverlappingTargetsStartsOneRunner(t *testing.T) {
	h := newHarness(t)
	a, b := baseTarget("a"), baseTarget("b")
	b.Repository = a.Repository
	h.begin(cfgOf(a, b))
	h.deliver(queuedEv(9), "a", "a", "b")
	if n := h.w.callCount("JITConfig", idA); n != 1 {
		t.Fatalf("JIT registrations for one job routed to two targets = %d, want 1", n)
	}
}

// jobDoneWithExitCheck runs target a with ExitCheck on and one runner whose job a delivery said
// completed; its process has not ended yet (finishJobs ends it).
func jobDoneWithExitCheck(t *testing.T) *harness {
	h := newHarness(t)
	h.s.opts.ExitCheck = 2 * time.Second
	h.begin(cfgOf(baseTarget("a")))
	h.deliver(queuedEv(3), "a", "a")
	names := h.runnerNames("a", journal.StateStarted)
	h.w.setQueued(idA, 1)
	h.w.takeJobs(idA)
	h.deliver(jobEv("completed", 3, names[0]), "a", "a")
	return h
}

// With ExitCheck on, a runner that ends between passes is concluded by a light pass at the next
// check, without a read of GitHub, instead of at the next poll.
func TestEndedRunnerIsConcludedBeforeThePoll(t *testing.T) {
	h := jobDoneWithExitCheck(t)
	h.w.finishJobs(idA)
	before := h.githubCalls()
	h.tick(2*time.Second, 1, "a")
	if got := h.byState("a"); got[string(journal.StateCleaned)] != 1 {
		t.Fatalf("states after the exit check = %v, want the ended runner cleaned", got)
	}
	if after := h.githubCalls(); after["Runners"] != before["Runners"] || after["Queued"] != before["Queued"] || after["DeleteRunner"] != before["DeleteRunner"] {
		t.Fatalf("the exit check's pass reached GitHub: %v -> %v", before, after)
	}
}

// The runner list is read at recovery, then every 5th pass of an idle target; after a launch it
// is read on every pass until the runner is listed online (its startup window), and once more
// after what the target owns changed.
func TestRunnerListIsReadWhenItCanTellSomething(t *testing.T) {
	h := startA(t, 0)
	lists := func() int { return h.w.callCount("Runners", idA) }
	if lists() != 1 {
		t.Fatalf("recovery pass: %d runner lists, want 1", lists())
	}
	for range 5 {
		h.tick(poll, 1, "a")
	}
	if got := lists(); got != 2 {
		t.Fatalf("5 idle passes read the runner list %d times, want 1 (every 5th)", got-1)
	}
	if q := h.w.callCount("Queued", idA); q != 6 {
		t.Fatalf("demand reads in 6 passes = %d, want 6", q)
	}
	h.w.setQueued(idA, 1)
	h.tick(poll, 1, "a") // launches
	before := lists()
	h.tick(poll, 1, "a") // the runner is in its startup window: listed (online now)
	h.tick(poll, 1, "a") // online, and nothing it owns changed: not listed
	if got := lists() - before; got != 1 {
		t.Fatalf("after a launch: %d runner lists in 2 passes, want 1 (until it is listed online)", got)
	}
}

// TestDeliveryDoesNotWaitForAFullRead: a delivery that comes while a full pass is still reading
// GitHub (an organization's read is a request per repository and may take minutes in the
// governor) starts its runner at once, in a light pass beside the read; the full pass that
// follows starts no second runner for the same job.
func TestDeliveryDoesNotWaitForAFullRead(t *testing.T) {
	h := startA(t, 0)
	block, passes := h.blockNextRead() // the next full pass, which blocks in its read
	h.s.Deliver(queuedEv(501), []string{"a"})
	h.waitPass("a", passes) // the light pass, while the read still blocks
	if got := h.w.callCount("JITConfig", idA); got != 1 {
		t.Fatalf("JIT registrations while the full read blocked = %d, want 1", got)
	}
	close(block)
	h.waitPass("a", passes+1) // the full pass
	h.settle(1)
	if got := h.w.callCount("JITConfig", idA); got != 1 {
		t.Fatalf("JIT registrations after the full pass = %d, want still 1", got)
	}
	if got := len(h.runnerNames("a", journal.StateStarted)); got != 1 {
		t.Fatalf("started runners = %d, want 1", got)
	}
	h.w.checkPromises()
}

// A runner that ends while a full pass is still reading GitHub is concluded by a light pass at the
// next exit check, not after the read: an organization's read may take minutes in the governor.
func TestEndedRunnerIsConcludedDuringAFullRead(t *testing.T) {
	h := jobDoneWithExitCheck(t)
	block, passes := h.blockNextRead() // the next full pass, which blocks in its read
	h.w.finishJobs(idA)                // the runner's process ends while the read blocks
	h.settleTimers(1)                  // the exit check beside the read
	h.clock.Advance(2 * time.Second)
	h.waitPass("a", passes) // the light pass, while the read still blocks
	if got := h.byState("a"); got[string(journal.StateCleaned)] != 1 {
		t.Fatalf("states while the full read blocked = %v, want the ended runner cleaned", got)
	}
	close(block)
	h.waitPass("a", passes+1)
	h.settle(1)
	h.w.checkPromises()
}

// A shutdown cuts a full pass's read of GitHub: the drain launches nothing, so the read's demand
// is moot, and the drain pass must come within the bound.
func TestShutdownCutsAFullRead(t *testing.T) {
	h := startA(t, 1)
	block, _ := h.blockNextRead() // the next full pass, which blocks in its read
	defer close(block)
	done := h.shutdownAsync()
	ctx := h.deadline()
	for advanced := time.Duration(0); ; {
		select {
		case rep := <-done:
			if rep.TimedOut || rep.Left != 0 {
				t.Fatalf("report = %+v, want a drained host before the bound", rep)
			}
			if advanced >= 30*time.Second {
				t.Fatalf("drained only after %s of drain passes", advanced)
			}
			h.joinRun()
			h.w.checkPromises()
			return
		case <-ctx.Done():
			t.Fatal("Shutdown waited for the blocked read")
		case <-time.After(time.Millisecond):
			if h.clock.Waiters() == 2 && h.s.inflight.Load() == 0 { // a drain pass's poll and the bound
				h.clock.Advance(time.Second)
				advanced += time.Second
			}
		}
	}
}

// A runner that a light pass launched while the recovery pass still read GitHub is this daemon's
// own: the recovery pass that follows supervises it without reporting it "adopted" (found
// running after a restart), which would mislead an operator reading the events.
func TestRunnerLaunchedDuringRecoveryIsNotAdopted(t *testing.T) {
	h := newHarness(t)
	block := h.w.blockQueued(idA)
	h.apply(cfgOf(baseTarget("a")))
	h.run()
	h.waitCalls("Queued", idA, 0) // the recovery pass blocks in its read
	h.s.Deliver(queuedEv(501), []string{"a"})
	h.waitPass("a", 0) // the light pass launches the job's runner
	if got := len(h.runnerNames("a", journal.StateStarted)); got != 1 {
		t.Fatalf("started runners after the delivery = %d, want 1", got)
	}
	close(block)
	h.waitPass("a", 1) // the recovery pass
	h.settle(1)
	if evs := h.events("supervising it again"); len(evs) != 0 {
		t.Fatalf("the recovery pass reported its own daemon's runner adopted: %v", evs)
	}
	h.w.checkPromises()
}

// TestBookStillQueued: of a fleet's view, read elsewhere and maybe before a delivery told this
// host a job started, only the jobs still queued as far as the host knows are demand.
func TestBookStillQueued(t *testing.T) {
	b := newJobBook()
	now := time.Unix(1000, 0)
	b.deliver(jobEv("in_progress", 2, "h-b-1"), now, "h-b-")
	b.deliver(jobEv("completed", 3, "elsewhere-1"), now, "h-b-")
	view := []Job{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4, Runner: "elsewhere-2"}, {ID: 5}}
	var ids []int64
	for _, j := range b.stillQueued(view) {
		ids = append(ids, j.ID)
	}
	if len(ids) != 2 || ids[0] != 1 || ids[1] != 5 {
		t.Fatalf("still queued of the view: %v, want [1 5] (2 and 3 seen started, 4 running)", ids)
	}
}

// Webhook routing asks journal.Room like the pass does, host bound included, also before any
// loop has passed: a host whose one slot a previous run's runner holds has no room for a or b,
// though neither loop owns anything yet (it used to answer "below max_runners", the target's
// bound alone).
func TestDeliveryRoomCountsTheHostBeforeAnyPass(t *testing.T) {
	h := newHarness(t)
	// First passes wait for their slot of an hour: no pass reads the journal in this test.
	h.pacer = fixedPacer{interval: time.Hour, n: 2, index: map[string]int{"a": 1, "b": 1}, window: time.Hour}
	h.s = h.newSupervisor()
	a, b := baseTarget("a"), baseTarget("b")
	b.Repository = a.Repository
	cfg := cfgOf(a, b)
	cfg.Daemon.MaxRunners = 1
	h.j.Put(journal.Attempt{ID: "h1-7", Target: "a", Policy: fingerprint(a), Slot: 0, RunnerName: journal.RunnerNamePrefix + "h1-7",
		State: journal.StateBusy, CreatedAt: h.clock.Now(), UpdatedAt: h.clock.Now()})
	h.apply(cfg)
	h.run()
	h.settleTimers(2)
	for _, name := range []string{"a", "b"} {
		if h.loop(name).hasRoom(cfg) {
			t.Errorf("target %s has room on a host whose only slot is held", name)
		}
	}
	if n := h.passCount("a") + h.passCount("b"); n != 0 {
		t.Fatalf("%d passes ran; the test needs none", n)
	}
}
