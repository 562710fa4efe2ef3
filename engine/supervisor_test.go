package engine

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine/enginetest"
	"github.com/runner-manager/runner-manager/journal"
)

func (h *harness) loop(name string) *loop {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	for k, l := range h.s.loops {
		if k.name == name {
			return l
		}
	}
	return nil
}

// sameLoop fails the test unless a's loop after what is still la, not restarted, and a has
// started runners started.
func (h *harness) sameLoop(la *loop, started int, what string) {
	h.t.Helper()
	if h.loop("a") != la {
		h.t.Fatalf("%s restarted a's loop", what)
	}
	if got := h.byState("a"); got["started"] != started {
		h.t.Fatalf("after %s: %v, want %d started", what, got, started)
	}
}

func TestApplySameConfigTwiceIsNoOp(t *testing.T) {
	h := newHarness(t)
	h.w.setQueued("repo:acme/a", 1)
	h.begin(cfgOf(baseTarget("a"), baseTarget("b")))
	la := h.loop("a")
	r := h.apply(cfgOf(baseTarget("a"), baseTarget("b"))) // equal content, new pointer
	if !r.NoOp() || r.Generation != 1 {
		t.Fatalf("second Apply of the same config: %+v, want a no-op at generation 1", r)
	}
	h.settle(2)
	h.sameLoop(la, 1, "a no-op Apply")
}

func TestApplyChangedFieldsTakeEffectNextPassWithoutRestart(t *testing.T) {
	h, a := startAWith(t, 3, func(a *config.Target) { a.MaxRunners = 1 })
	if got := h.byState("a"); got["started"] != 1 {
		t.Fatalf("max_runners 1: %v", got)
	}
	la := h.loop("a")
	a.MaxRunners = 3
	before := h.passCount("a")
	r := h.apply(cfgOf(a))
	if len(r.Changed) != 1 || r.Changed[0].Fields[0] != "max_runners" || r.Changed[0].Replace {
		t.Fatalf("report = %+v", r)
	}
	h.waitPass("a", before)
	h.settle(1)
	h.sameLoop(la, 3, "a capacity change to max_runners 3")
}

// A reload that changes one target runs a pass of that loop alone: the others read the new snapshot
// on their own schedule (with 1,000 targets, waking all of them cost 1,000 passes per edit).
func TestApplyWakesOnlyTheLoopsItConcerns(t *testing.T) {
	h := newHarness(t)
	a, b := baseTarget("a"), baseTarget("b")
	h.begin(cfgOf(a, b))
	h.settle(2)
	beforeA, beforeB := h.passCount("a"), h.passCount("b")
	a.MinIdle = 1
	if r := h.apply(cfgOf(a, b)); len(r.Changed) != 1 || r.Changed[0].Name != "a" {
		t.Fatalf("report = %+v, want only a changed", r)
	}
	h.waitPass("a", beforeA)
	h.settle(2)
	if got := h.passCount("b"); got != beforeB {
		t.Fatalf("an edit of a ran %d pass(es) of b", got-beforeB)
	}

	// A host-wide change concerns every loop.
	cfg := cfgOf(a, b)
	cfg.Daemon.MaxRunners++
	beforeA, beforeB = h.passCount("a"), h.passCount("b")
	h.apply(cfg)
	h.waitPass("a", beforeA)
	h.waitPass("b", beforeB)
}

func TestNoEnabledTargetsMakesNoCallsAndStillStops(t *testing.T) {
	clock := enginetest.NewFakeClock(time.Unix(0, 0))
	j := enginetest.NewJournal(testHost)
	// Demand, Registrar and Launcher are nil: any call would panic.
	s := New(Deps{Journal: j, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Options{})
	off := false
	cfg := cfgOf(with(baseTarget("a"), func(t *config.Target) { t.Enabled = &off }))
	if _, err := s.Apply(context.Background(), cfg); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if err := s.UpgradeDrain(ctx); err != nil {
		t.Fatalf("UpgradeDrain with nothing running: %v", err)
	}
	if r, err := s.Apply(ctx, cfgOf()); err != nil || !r.NoOp() { // reloads still work; dropping a disabled target changes nothing
		t.Fatalf("reload: %+v, %v", r, err)
	}
	rep, err := s.Shutdown(ctx)
	if err != nil || rep.Left != 0 {
		t.Fatalf("Shutdown = %+v, %v", rep, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := s.Status(); len(st.Targets) != 0 || st.Generation != 1 {
		t.Fatalf("status = %+v", st)
	}
}

func TestApplyRefusedWholeWhenDepsCannotServeIt(t *testing.T) {
	j := enginetest.NewJournal(testHost)
	s := New(Deps{Journal: j, Clock: enginetest.NewFakeClock(time.Unix(0, 0)), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Options{HostID: testHost})
	if _, err := s.Apply(context.Background(), cfgOf()); err != nil {
		t.Fatal(err)
	}
	_, err := s.Apply(context.Background(), cfgOf(baseTarget("a")))
	if err == nil || !strings.Contains(err.Error(), "auth login") || !strings.Contains(err.Error(), "a") {
		t.Fatalf("Apply without a GitHub client = %v, want a refusal naming the fix", err)
	}
	st := s.Status()
	if st.Generation != 1 || st.LastReload.OK || s.config().Targets != nil {
		t.Fatalf("a refused Apply changed state: %+v", st)
	}
}

func TestRemovalDrainsOnlyThatTarget(t *testing.T) {
	h := newHarness(t)
	h.w.setQueued("repo:acme/a", 2)
	h.w.setQueued("repo:acme/b", 1)
	h.begin(cfgOf(baseTarget("a"), baseTarget("b")))
	h.w.setQueued("repo:acme/a", 1)
	h.w.takeJobs("repo:acme/a") // one of a's runners is busy, one idle
	lb := h.loop("b")

	before := h.passCount("a")
	r := h.apply(cfgOf(baseTarget("b")))
	if len(r.Removed) != 1 || r.Removed[0] != "a" || len(r.Unchanged) != 1 {
		t.Fatalf("report = %+v", r)
	}
	h.waitPass("a", before)
	h.settle(2)
	h.w.setQueued("repo:acme/b", 3)
	h.tick(poll, 2, "b", "a") // a drains on its 1 s drain poll meanwhile
	if got := h.byState("b"); got["started"] != 3 {
		t.Fatalf("b must keep launching while a drains: %v", got)
	}
	if h.loop("b") != lb {
		t.Fatal("removing a touched b's loop")
	}
	if got := h.byState("a"); got["busy"] != 1 || got["cleaned"] != 1 {
		t.Fatalf("a drained: %v, want the busy runner kept and the idle one concluded", got)
	}
	if alive, busy := h.w.counts("repo:acme/a"); alive != 1 || busy != 1 {
		t.Fatalf("a's busy runner must keep running: alive %d busy %d", alive, busy)
	}
	h.w.finishJobs("repo:acme/a")
	h.tickRetiring(time.Second, 2, "a")
	if h.loop("a") != nil {
		t.Fatal("a's loop should end once drained")
	}
	if st := h.s.Status(); len(st.Targets) != 1 || st.Targets[0].Name != "b" {
		t.Fatalf("status targets = %+v", st.Targets)
	}
	h.w.checkPromises()
}

func TestIdentityChangeDrainsOldRegistrationsAndStartsNewLoop(t *testing.T) {
	h := startA(t, 2)
	h.w.setQueued("repo:acme/a", 1)
	h.w.takeJobs("repo:acme/a")
	h.w.setQueued("repo:acme/moved", 1)

	moved := with(baseTarget("a"), func(t *config.Target) { t.Repository = "acme/moved" })
	before := h.passCount("a")
	r := h.apply(cfgOf(moved))
	if len(r.Restarted) != 1 {
		t.Fatalf("report = %+v, want a restarted", r)
	}
	h.waitPass("a", before)
	h.settle(2) // the old identity's draining loop and the new one
	h.tick(time.Second, 2, "a")
	var oldBusy, newStarted int
	for _, at := range h.j.All() {
		switch {
		case policyIdentity(at.Policy) == "repo:acme/a" && at.State == journal.StateBusy:
			oldBusy++
		case policyIdentity(at.Policy) == "repo:acme/moved" && at.State == journal.StateStarted:
			newStarted++
		}
	}
	if oldBusy != 1 || newStarted != 1 {
		t.Fatalf("old busy %d (want 1, left to finish), new started %d (want 1)", oldBusy, newStarted)
	}
	if _, busy := h.w.counts("repo:acme/a"); busy != 1 {
		t.Fatal("the busy runner at the old identity must survive")
	}
	h.w.finishJobs("repo:acme/a")
	h.tickRetiring(time.Second, 2, "a@repo:acme/a")
	st := h.s.Status()
	if len(st.Targets) != 1 || st.Targets[0].Identity != "repo:acme/moved" {
		t.Fatalf("targets after the old identity drained: %+v", st.Targets)
	}
	h.w.checkPromises()
}

func TestLabelChangeReplacesIdleAndLetsBusyFinish(t *testing.T) {
	h, a := startAWith(t, 1, func(a *config.Target) { a.MinIdle = 1 })
	h.w.takeJobs("repo:acme/a")
	h.tick(poll, 1, "a") // observe busy
	oldPolicy := fingerprint(a)
	a.Labels = []string{"self-hosted", "linux", "gpu"}
	before := h.passCount("a")
	r := h.apply(cfgOf(a))
	if len(r.Changed) != 1 || !r.Changed[0].Replace {
		t.Fatalf("report = %+v", r)
	}
	h.waitPass("a", before)
	h.settle(1)
	counts := map[string]int{}
	for _, at := range h.j.All() {
		counts[string(at.State)+" "+map[bool]string{true: "old", false: "new"}[at.Policy == oldPolicy]]++
	}
	if counts["busy old"] != 1 || counts["deregistered old"] != 1 || counts["started new"] != 1 {
		t.Fatalf("after a label change: %v, want busy old kept, idle old replaced by a new one", counts)
	}
	h.w.checkPromises()
}

func TestMonitorModeObservesOnly(t *testing.T) {
	h, _ := startAWith(t, 4, func(a *config.Target) { a.Mode = "monitor" })
	if n := h.w.callCount("JITConfig", "repo:acme/a"); n != 0 || len(h.j.All()) != 0 {
		t.Fatalf("monitor mode launched: %d JIT calls, %d attempts", n, len(h.j.All()))
	}
	if st := h.s.Status(); st.Targets[0].Demand != 4 || st.Targets[0].Mode != "monitor" {
		t.Fatalf("status = %+v", st.Targets[0])
	}
}

func TestWakeRunsAPassAtOnce(t *testing.T) {
	h := newHarness(t)
	h.begin(cfgOf(baseTarget("a")))
	h.w.setQueued("repo:acme/a", 1)
	h.poke("a", 1) // no time passes
	if got := h.byState("a"); got["started"] != 1 {
		t.Fatalf("after Wake: %v", got)
	}
}

func TestLeftoversWithoutGitHubAccessAreReportedNotTouched(t *testing.T) {
	j := enginetest.NewJournal(testHost)
	j.Put(journal.Attempt{ID: "h1-1", Target: "gone", Policy: "repo:acme/gone x", RunnerName: "runner-manager-h1-1", State: journal.StateBusy, ShimPID: 7})
	logged := make(chan string, 16)
	s := New(Deps{Journal: j, Clock: enginetest.NewFakeClock(time.Unix(0, 0)), Logger: slog.New(slog.NewTextHandler(chanWriter(logged), nil))}, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	deadline := time.After(10 * time.Second) // turns a missing warning into a failure, not a hang
	for found := false; !found; {
		select {
		case line := <-logged:
			found = strings.Contains(line, "await recovery")
		case <-deadline:
			t.Fatal("no warning about leftovers that need GitHub access")
		}
	}
	rep, err := s.Shutdown(context.Background())
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err != nil || rep.Left != 1 || rep.LeftBusy != 1 {
		t.Fatalf("Shutdown = %+v, %v: the busy leftover stays for a daemon with GitHub access", rep, err)
	}
	if a, _ := j.Get(context.Background(), "h1-1"); a.State != journal.StateBusy {
		t.Fatalf("leftover touched: %s", a.State)
	}
}

// chanWriter hands every log line to a channel (dropping lines nobody reads).
type chanWriter chan string

func (c chanWriter) Write(b []byte) (int, error) {
	select {
	case c <- string(b):
	default:
	}
	return len(b), nil
}
