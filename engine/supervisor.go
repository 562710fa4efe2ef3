package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// ErrStopped is returned by Apply once the supervisor has stopped.
var ErrStopped = errors.New("supervisor stopped")

// Supervisor holds one loop per enabled target (plus draining loops for targets being removed or
// re-pointed, and for journal attempts whose target is no longer in the file).
type Supervisor struct {
	deps   Deps
	opts   Options
	clock  Clock
	rand   Rand
	log    *slog.Logger
	events *eventLog

	planMu    sync.Mutex // one Plan at a time in this process; the journal is the authority across restarts
	contactMu sync.Mutex
	contact   map[string]time.Time // by account: the last RecordGitHubContact, to write each at most once a minute
	cfg       atomic.Pointer[config.Config]
	drain     atomic.Int32 // drainNone, drainUpgrade, drainShutdown

	mu         sync.Mutex
	gen        int64
	lastReload ReloadResult
	loops      map[loopKey]*loop
	changed    chan struct{} // closed and replaced whenever a loop ends
	runCtx     context.Context
	cancel     context.CancelFunc
	stopped    bool
	wg         sync.WaitGroup
	shutdownCh chan struct{} // closed when Shutdown begins: supersedes an upgrade drain
	startedCh  chan struct{} // closed once Run has started the loops and taken over leftovers

	// hard ends when the shutdown bound is reached: cleanup steps, which a stop does not cut
	// short, end then too (cleanupContext).
	hard       context.Context
	hardCancel context.CancelFunc
	inflight   atomic.Int32    // launches under way (launching); an upgrade drain waits for them
	leftMu     sync.Mutex      // guards left
	left       map[string]bool // attempt ids a drain could not deregister: left for recovery (leave)
	unsureMu   sync.Mutex      // guards unsure
	// unsure holds, by identity, the targets this run sent a registration request to that was
	// given up or that no journal record accounts for (doubt): the only ones a stop's last sweep
	// reads, so a stop costs GitHub reads by what this run registered, not by its targets.
	unsure map[string]config.Target
	claims *claims        // what each target's loop wants, for its fair room (room.go)
	names  map[string]int // loops per target name, under mu
	// owning is, while Run starts the loops, the loops that own live attempts: the others start
	// knowing they own nothing (loop.ownedLast), so a stop before their first pass reads nothing.
	owning map[loopKey]bool
	rooms  atomic.Pointer[journal.Room] // the slot leases as the last pass (or Run) read them, for Deliver

	began atomic.Int64 // unix nanos when Run began, on the engine's clock: settled

	afterPass func(loopKey) // test hook: called after every pass, before the loop parks
}

// New returns a supervisor; nothing runs until Run.
func New(deps Deps, opts Options) *Supervisor {
	s := &Supervisor{deps: deps, opts: opts.withDefaults(), clock: deps.Clock, rand: deps.Rand, log: deps.Logger,
		loops: map[loopKey]*loop{}, changed: make(chan struct{}), shutdownCh: make(chan struct{}), startedCh: make(chan struct{}), left: map[string]bool{},
		unsure: map[string]config.Target{}, contact: map[string]time.Time{}, claims: newClaims(), names: map[string]int{}}
	s.hard, s.hardCancel = context.WithCancel(context.Background())
	if s.clock == nil {
		s.clock = RealClock{}
	}
	if s.rand == nil {
		s.rand = newRand()
	}
	s.rand = &lockedRand{r: s.rand}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.events = newEventLog(s.opts.EventLimit, s.log, s.clock)
	return s
}

func (s *Supervisor) config() *config.Config { return s.cfg.Load() }

// Config is the config the target loops run on now (nil before the first Apply). It is newer than
// anything the caller hands its own parts after Apply returns, so a part told of a loop's end
// (Observer's ForgetTarget) asks here whether the target is still wanted.
func (s *Supervisor) Config() *config.Config { return s.config() }

func (s *Supervisor) crash(p CrashPoint, attemptID string) {
	if s.deps.Crash != nil {
		s.deps.Crash(p, attemptID)
	}
}

func (s *Supervisor) plan(ctx context.Context, req journal.PlanRequest) (journal.Attempt, error) {
	s.planMu.Lock()
	defer s.planMu.Unlock()
	return s.deps.Journal.Plan(ctx, req)
}

// cleanupContext is for conclusion steps: not cut short by a stop (ctx), so a cleanup is not left
// half done, but bounded by the call timeout and by the shutdown bound (hard), so a hung GitHub
// cannot hold a stop past it.
func (s *Supervisor) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.CallTimeout)
	stop := context.AfterFunc(s.hard, cancel)
	return c, func() { stop(); cancel() }
}

// clockContext is ctx ended after d on the engine's clock (a fake one in tests), not the wall clock.
func (s *Supervisor) clockContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	timer, stop := s.clock.Timer(d)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-timer:
			cancel()
		case <-c.Done():
		}
	}()
	return c, func() { stop(); cancel(); <-done }
}

// launching runs one launch unless a drain has begun; started says whether it ran. The launch is
// counted first and the drain checked after, so an upgrade drain that begins meanwhile either
// sees the launch under way or is seen by it.
func (s *Supervisor) launching(launch func() error) (started bool, err error) {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	if s.draining() {
		return false, nil
	}
	return true, launch()
}

// leave records that a drain could not deregister idle runner id (GitHub refused or did not
// answer): an upgrade no longer waits for it; the next daemon's recovery adopts or concludes it.
func (s *Supervisor) leave(id string) {
	s.leftMu.Lock()
	defer s.leftMu.Unlock()
	s.left[id] = true
}

// doubt records that a registration request of t's identity was sent and given up, or answered
// without its journal record being written: GitHub may hold a registration of this host that no
// journal record names, which only a read of t's runners can find (deleteOrphans).
func (s *Supervisor) doubt(t config.Target) {
	s.unsureMu.Lock()
	defer s.unsureMu.Unlock()
	s.unsure[t.Identity()] = t
}

// doubted reports whether doubt was called for identity in this run.
func (s *Supervisor) doubted(identity string) bool {
	s.unsureMu.Lock()
	defer s.unsureMu.Unlock()
	_, ok := s.unsure[identity]
	return ok
}

func (s *Supervisor) leftForRecovery(id string) bool {
	s.leftMu.Lock()
	defer s.leftMu.Unlock()
	return s.left[id]
}

// recordContact notes a successful GitHub answer for target t in the journal under t's account,
// throttled to one write a minute per account: one account answering never stands in for another
// whose credential is broken (TestGitHubContactRecordedPerAccount).
func (s *Supervisor) recordContact(ctx context.Context, t config.Target) {
	account := t.AccountName()
	now := s.clock.Now()
	s.contactMu.Lock()
	if last, ok := s.contact[account]; ok && now.Sub(last) < time.Minute {
		s.contactMu.Unlock()
		return
	}
	s.contact[account] = now
	s.contactMu.Unlock()
	if err := s.deps.Journal.RecordGitHubContact(ctx, account, now); err != nil {
		s.log.Warn("could not record the last GitHub contact in the journal", "account", account, "err", err)
	}
}

// checkDeps refuses, before anything changes, a config whose enabled targets the deps cannot serve.
func (s *Supervisor) checkDeps(cfg *config.Config) error {
	if cfg == nil {
		return errors.New("apply: no config snapshot")
	}
	var names []string
	for _, t := range cfg.Targets {
		if t.IsEnabled() {
			names = append(names, t.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	var missing []string
	for what, ok := range map[string]bool{"GitHub demand": s.deps.Demand != nil, "GitHub registrar": s.deps.Registrar != nil,
		"runner launcher": s.deps.Launcher != nil, "journal": s.deps.Journal != nil,
		"host id": s.opts.HostID != "", "runtime directory root": s.opts.RuntimeRoot != ""} {
		if !ok {
			missing = append(missing, what)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("cannot run targets %s: no %s configured; run `runner-manager auth login` or fix the [github] section, then reload",
			strings.Join(names, ", "), strings.Join(missing, ", "))
	}
	return nil
}

// Apply makes cfg the desired state. It diffs by target name against the current snapshot, checks
// the deps can serve the result before touching any loop (a refusal changes nothing), then starts
// added loops and wakes changed or removed ones, which pick up the new snapshot on their next pass.
// Applying the same config twice is a no-op.
func (s *Supervisor) Apply(ctx context.Context, cfg *config.Config) (Report, error) {
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	if err := s.checkDeps(cfg); err != nil {
		s.ReloadFailed(err)
		return Report{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return Report{}, ErrStopped
	}
	old := s.cfg.Load()
	r := diff(old, cfg)
	s.cfg.Store(cfg)
	if old == nil || !r.NoOp() {
		s.gen++
	}
	r.Generation = s.gen
	s.lastReload = ReloadResult{Time: s.clock.Now(), OK: true, Report: &r}
	if old != nil && r.NoOp() {
		s.events.emit(slog.LevelInfo, "", "", EventReload, fmt.Sprintf("config generation %d unchanged: nothing to do", s.gen))
		return r, nil
	}
	s.events.emit(slog.LevelInfo, "", "", EventReload, fmt.Sprintf("config generation %d applied: %s", s.gen, r.Summary()))
	if s.runCtx != nil {
		s.syncLoopsLocked(r.affected())
	}
	return r, nil
}

// ReloadFailed records a rejected reload (invalid file or Apply refusal) for status; the current
// config keeps running.
func (s *Supervisor) ReloadFailed(err error) {
	s.mu.Lock()
	s.lastReload = ReloadResult{Time: s.clock.Now(), OK: false, Error: err.Error()}
	s.mu.Unlock()
	// One record: the daemon logs each problem as a record of its own, and a multi-line message
	// would print the later problems without a timestamp in text format.
	msg := err.Error()
	if first, rest, ok := strings.Cut(msg, "\n"); ok {
		msg = fmt.Sprintf("%s (and %d more problem(s), logged one by one)", first, strings.Count(rest, "\n")+1)
	}
	s.events.emit(slog.LevelError, "", "", EventReloadFailed, "config rejected, the last good config keeps running: "+msg)
}

// Summary is the report in one line ("added x; changed web (max_runners)"), as the reload event and
// `runner-manager reload` say it.
func (r Report) Summary() string {
	var parts []string
	add := func(label string, names []string) {
		if len(names) > 0 {
			parts = append(parts, label+" "+strings.Join(names, ","))
		}
	}
	add("added", r.Added)
	add("removed", r.Removed)
	add("disabled", r.Disabled)
	add("restarted", r.Restarted)
	for _, c := range r.Changed {
		parts = append(parts, fmt.Sprintf("changed %s (%s)", c.Name, strings.Join(c.Fields, ",")))
	}
	add("daemon", r.Daemon)
	add("sections", r.Sections)
	if len(parts) == 0 {
		return "no target changed"
	}
	return strings.Join(parts, "; ")
}

// syncLoopsLocked starts a loop for every enabled target without one and wakes the existing loops
// that wake selects, so they read the new snapshot now (a loop whose target is gone starts
// draining on that pass). New loops need no wake: their first pass starts at once.
func (s *Supervisor) syncLoopsLocked(wake func(name string) bool) {
	cfg := s.cfg.Load()
	for key, l := range s.loops {
		if wake(key.name) {
			l.poke()
		}
	}
	for _, t := range cfg.Targets {
		if !t.IsEnabled() {
			continue
		}
		key := loopKey{t.Name, t.Identity()}
		if _, ok := s.loops[key]; !ok {
			s.startLoopLocked(key, t)
		}
	}
}

// wakeAll is the syncLoopsLocked selector for a start or a resume: every loop looks now.
func wakeAll(string) bool { return true }

// affected selects the loops a reload concerns: the targets it removed, disabled, re-pointed or
// changed. A change of [daemon] or another section concerns every loop (host capacity, the
// credential); any other loop reads the new snapshot on its next pass, untouched.
func (r Report) affected() func(name string) bool {
	if len(r.Daemon) > 0 || len(r.Sections) > 0 {
		return wakeAll
	}
	names := map[string]bool{}
	for _, list := range [][]string{r.Removed, r.Disabled, r.Restarted} {
		for _, n := range list {
			names[n] = true
		}
	}
	for _, c := range r.Changed {
		names[c.Name] = true
	}
	return func(name string) bool { return names[name] }
}

func (s *Supervisor) startLoopLocked(key loopKey, last config.Target) {
	l := newLoop(s, key, last)
	if s.owning != nil && !s.owning[key] {
		l.ownedLast = 0
	}
	s.loops[key] = l
	s.names[key.name]++
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		l.run(s.runCtx)
	}()
}

// retire removes a drained loop that owns nothing. It re-checks under the lock, so a loop whose
// target was re-added meanwhile keeps running instead.
func (s *Supervisor) retire(l *loop) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, _, draining := l.snapshot(); !draining {
		return false
	}
	delete(s.loops, l.key)
	if s.names[l.key.name]--; s.names[l.key.name] <= 0 {
		delete(s.names, l.key.name)
	}
	if !s.hasLoopLocked(l.key.name) {
		s.claims.forget(l.key.name)
	}
	s.retiredLocked(l.key.name)
	close(s.changed)
	s.changed = make(chan struct{})
	return true
}

// settled reports whether a runner list read at `at` shows every registration made for attempt a
// that will ever land. This run's own requests are bounded by the call timeout from the planned
// record (a launch's governor wait and its request); a previous run's were all sent before this
// run began, and GitHub answers a registration within RegistrationTimeout, so those settle that
// long after the start even though their planned record is older.
func (s *Supervisor) settled(a journal.Attempt, at time.Time) bool {
	if at.Sub(a.CreatedAt) >= s.opts.CallTimeout {
		return true
	}
	began := time.Unix(0, s.began.Load())
	return s.began.Load() != 0 && a.CreatedAt.Before(began) && at.Sub(began) >= RegistrationTimeout
}

// hasLoopLocked reports whether a loop of target name runs.
func (s *Supervisor) hasLoopLocked(name string) bool { return s.names[name] > 0 }

// Wake asks every loop of the named target for a pass now (a webhook delivery, for instance).
func (s *Supervisor) Wake(target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, l := range s.loops {
		if k.name == target {
			l.poke()
		}
	}
}

// Run starts the loops of the applied config, plus a draining loop for journal attempts of targets
// no longer configured (startup recovery of removed targets), and supervises until ctx ends or
// Shutdown finishes. Cancelling ctx stops supervising only: runners keep running for recovery.
// Started is closed once Run has read the journal, started every target loop and taken over the
// runners of removed targets: the daemon's readiness (systemd READY=1) waits for it, not for any
// pass, which needs GitHub.
func (s *Supervisor) Started() <-chan struct{} { return s.startedCh }

func (s *Supervisor) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped && s.runCtx == nil {
		s.mu.Unlock()
		return nil // Shutdown came first: nothing to run
	}
	if s.runCtx != nil {
		s.mu.Unlock()
		return errors.New("engine: Run called twice")
	}
	if s.deps.Journal == nil {
		s.mu.Unlock()
		return errors.New("engine: no journal; the daemon must open the state dir first")
	}
	live, err := s.deps.Journal.Live(ctx)
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("read the journal for startup recovery: %w; check the state dir", err)
	}
	s.runCtx, s.cancel = context.WithCancel(ctx)
	room := journal.RoomOf(0, live) // webhook routing's room until the first pass reads its own
	s.rooms.Store(&room)
	s.sweepCgroups(ctx, live)
	s.began.Store(s.clock.Now().UnixNano())
	s.owning = map[loopKey]bool{}
	for _, a := range live {
		s.owning[loopKey{a.Target, policyIdentity(a.Policy)}] = true
	}
	if s.cfg.Load() != nil {
		s.syncLoopsLocked(wakeAll)
	}
	s.recoverLeftoversLocked(live)
	s.owning = nil
	close(s.startedCh)
	runCtx := s.runCtx
	s.mu.Unlock()

	<-runCtx.Done()
	// Mark stopped before joining so a concurrent Apply cannot add a loop to a closing WaitGroup.
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// recoverLeftoversLocked starts a draining loop for live attempts no configured loop owns.
func (s *Supervisor) recoverLeftoversLocked(live []journal.Attempt) {
	pending := 0
	for _, a := range live {
		key := loopKey{a.Target, policyIdentity(a.Policy)}
		if _, ok := s.loops[key]; ok {
			continue
		}
		if s.deps.Registrar == nil || s.deps.Launcher == nil || s.deps.Demand == nil {
			pending++
			continue
		}
		s.startLoopLocked(key, targetForIdentity(key.name, key.identity))
	}
	if pending > 0 {
		s.events.emit(slog.LevelWarn, "", "", EventLoop, fmt.Sprintf("%d runner attempts of unconfigured targets await recovery, which needs GitHub access: configure a credential", pending))
	}
}
