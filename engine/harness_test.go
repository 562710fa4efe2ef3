package engine

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine/enginetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testHost = "h1"

// harness runs one Supervisor on fakes and fake time; passes are observed through afterPass, so
// tests wait on events, never on real sleeps (the real-time deadline only turns a hang into a failure).
type harness struct {
	t     *testing.T
	clock *enginetest.FakeClock
	j     *enginetest.Journal
	w     *world
	s     *Supervisor
	crash []CrashPoint

	mu     sync.Mutex
	cond   *sync.Cond
	passes map[string]int

	runDone chan error
	cancel  context.CancelFunc

	policyKey   []byte        // Options.PolicyKey of the next newSupervisor
	callTimeout time.Duration // Options.CallTimeout of the next newSupervisor (0: the default)
	pacer       Pacer         // Deps.Pacer of the next newSupervisor (nil: no pacing)
	disk        Disk          // Deps.Disk of the next newSupervisor (nil: no disk check)
	observer    Observer      // Deps.Observer of the next newSupervisor
	launcher    Launcher      // Deps.Launcher of the next newSupervisor (nil: the world)
}

func newHarness(t *testing.T) *harness {
	clock := enginetest.NewFakeClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	j := enginetest.NewJournal(testHost)
	j.Now = clock.Now
	h := &harness{t: t, clock: clock, j: j, w: newWorld(t, j)}
	h.cond = sync.NewCond(&h.mu)
	h.s = h.newSupervisor()
	return h
}

func (h *harness) newSupervisor() *Supervisor {
	var lc Launcher = h.w
	if h.launcher != nil {
		lc = h.launcher
	}
	s := New(Deps{Journal: h.j, Demand: h.w, Registrar: h.w, Launcher: lc, Clock: h.clock, Rand: halfRand{}, Pacer: h.pacer, Disk: h.disk, Observer: h.observer,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Crash: func(p CrashPoint, _ string) {
			h.mu.Lock()
			h.crash = append(h.crash, p)
			h.mu.Unlock()
		}}, Options{HostID: testHost, RuntimeRoot: "/run/rm", PolicyKey: h.policyKey, CallTimeout: h.callTimeout})
	s.afterPass = func(k loopKey) {
		h.mu.Lock()
		h.passes[k.name]++
		h.passes[k.name+"@"+k.identity]++ // several loops share a name while an identity change drains
		h.cond.Broadcast()
		h.mu.Unlock()
	}
	h.mu.Lock()
	h.passes = map[string]int{}
	h.mu.Unlock()
	return s
}

func (h *harness) deadline() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// run starts Run; the test's cleanup stops it if the test did not.
func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.runDone = make(chan error, 1)
	go func() { h.runDone <- h.s.Run(ctx) }()
	h.t.Cleanup(h.stop)
}

// begin applies cfg, runs, and returns once every enabled target finished its first pass and parked.
func (h *harness) begin(cfg *config.Config) {
	h.t.Helper()
	h.apply(cfg)
	h.run()
	n := 0
	for _, tg := range cfg.Targets {
		if tg.IsEnabled() {
			h.waitPass(tg.Name, 0)
			n++
		}
	}
	h.settle(n)
}

// startA runs target a (repo acme/a) with queued jobs waiting, after its first pass.
func startA(t *testing.T, queued int) *harness {
	h, _ := startAWith(t, queued, func(*config.Target) {})
	return h
}

// startAWith is startA for target a as set changes it; it returns the target for the test to
// change and apply again.
func startAWith(t *testing.T, queued int, set func(a *config.Target)) (*harness, config.Target) {
	h := newHarness(t)
	a := baseTarget("a")
	set(&a)
	h.w.setQueued("repo:acme/a", queued)
	h.begin(cfgOf(a))
	return h, a
}

// joinRun waits for Run to return by itself (after Shutdown).
func (h *harness) joinRun() {
	h.t.Helper()
	if err := <-h.runDone; err != nil {
		h.t.Errorf("Run: %v", err)
	}
	h.cancel = nil
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	if err := <-h.runDone; err != nil {
		h.t.Errorf("Run: %v", err)
	}
	h.cancel = nil
}

func (h *harness) apply(cfg *config.Config) Report {
	h.t.Helper()
	r, err := h.s.Apply(context.Background(), cfg)
	if err != nil {
		h.t.Fatalf("Apply: %v", err)
	}
	return r
}

func (h *harness) passCount(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.passes[name]
}

// waitPass waits until target name has completed more than n passes.
func (h *harness) waitPass(name string, n int) {
	h.t.Helper()
	if enginetest.WaitCond(h.deadline(), h.cond, func() bool { return h.passes[name] > n }) != nil {
		h.t.Fatalf("target %s did not complete pass %d", name, n+1)
	}
}

// settle waits until exactly n timers are pending and no launch is under way: every loop (and
// drain) is parked. A launch holds a timer of its own (startup_timeout) while it runs.
func (h *harness) settle(n int) {
	h.t.Helper()
	ctx := h.deadline()
	for {
		h.settleTimers(n)
		if h.s.inflight.Load() == 0 && h.clock.Waiters() == n {
			return
		}
		select {
		case <-ctx.Done():
			h.t.Fatalf("expected %d parked timers and no launch, have %d timers and %d launches", n, h.clock.Waiters(), h.s.inflight.Load())
		case <-time.After(time.Millisecond):
		}
	}
}

// settleTimers waits until exactly n timers are pending, whatever runs.
func (h *harness) settleTimers(n int) {
	h.t.Helper()
	if err := h.clock.BlockUntil(h.deadline(), n); err != nil {
		h.t.Fatalf("expected %d pending timers, have %d", n, h.clock.Waiters())
	}
}

// tick advances fake time by d and waits until each named loop ran one more pass and all n timers
// are parked again.
func (h *harness) tick(d time.Duration, n int, names ...string) {
	h.t.Helper()
	h.settle(n)
	before := map[string]int{}
	for _, name := range names {
		before[name] = h.passCount(name)
	}
	h.clock.Advance(d)
	for _, name := range names {
		h.waitPass(name, before[name])
	}
	h.settle(n)
}

// runJobsOfA has target a's idle runners (repo acme/a, one timer) take its queued jobs and finish
// them, a pass after each: their runners exit and are concluded.
func (h *harness) runJobsOfA() {
	h.t.Helper()
	h.w.takeJobs("repo:acme/a")
	h.tick(poll, 1, "a")
	h.w.finishJobs("repo:acme/a")
	h.tick(poll, 1, "a")
}

// tickRetiring is tick for a pass after which loop name ends: n-1 timers remain.
func (h *harness) tickRetiring(d time.Duration, n int, name string) {
	h.t.Helper()
	h.settle(n)
	before := h.passCount(name)
	h.clock.Advance(d)
	h.waitPass(name, before)
	h.settle(n - 1)
}

// poke wakes target name and waits for the resulting pass.
func (h *harness) poke(name string, n int) {
	h.t.Helper()
	h.settle(n)
	before := h.passCount(name)
	h.s.Wake(name)
	h.waitPass(name, before)
	h.settle(n)
}

// blockNextRead makes target a's next demand reads block until the returned channel is closed,
// and lets the next full pass begin and block in its read. passes is the pass count before it.
func (h *harness) blockNextRead() (block chan struct{}, passes int) {
	h.t.Helper()
	block = h.w.blockQueued(idA)
	reads, passes := h.w.callCount("Queued", idA), h.passCount("a")
	h.settle(1)
	h.clock.Advance(poll)
	h.waitCalls("Queued", idA, reads)
	return block, passes
}

// shutdownAsync begins a Shutdown and answers its report when it returns.
func (h *harness) shutdownAsync() <-chan ShutdownReport {
	done := make(chan ShutdownReport, 1)
	go func() { rep, _ := h.s.Shutdown(context.Background()); done <- rep }()
	return done
}

// upgradeDrainAsync begins an UpgradeDrain and answers its error when it returns.
func (h *harness) upgradeDrainAsync() <-chan error {
	done := make(chan error, 1)
	go func() { done <- h.s.UpgradeDrain(context.Background()) }()
	return done
}

// shutdownDrained shuts down a with one idle runner and returns the report: the first drain pass
// deregisters and stops the runner, the next, a second later and well inside the bound,
// concludes it and the loop ends. A Shutdown that does not return then fails the test with what.
func (h *harness) shutdownDrained(what string) ShutdownReport {
	h.t.Helper()
	before := h.passCount("a")
	done := h.shutdownAsync()
	h.waitPass("a", before)
	h.settle(2) // the loop's drain poll and the shutdown bound
	before = h.passCount("a")
	h.clock.Advance(time.Second)
	h.waitPass("a", before)
	return await(h, done, what)
}

// await returns ch's answer; one that does not come before the test's deadline fails the test
// with what (a drain that should have returned).
func await[T any](h *harness, ch <-chan T, what string) T {
	h.t.Helper()
	select {
	case v := <-ch:
		return v
	case <-h.deadline().Done():
		h.t.Fatal(what)
	}
	var zero T
	return zero
}

// notYet fails the test with what if ch has answered: the drain must still be waiting.
func notYet[T any](h *harness, ch <-chan T, what string) {
	h.t.Helper()
	select {
	case v := <-ch:
		h.t.Fatalf("%s: it returned %v", what, v)
	default:
	}
}

// byState counts the journal's attempts of target per state.
func (h *harness) byState(target string) map[string]int {
	out := map[string]int{}
	for _, a := range h.j.All() {
		if a.Target == target {
			out[string(a.State)]++
		}
	}
	return out
}

// halfRand answers the middle of every range, so jittered intervals are exactly nominal.
type halfRand struct{}

func (halfRand) Int64N(n int64) int64 { return n / 2 }
