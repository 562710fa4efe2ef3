package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// loopKey identifies a loop: a target's name and the identity its runners are registered under.
// An identity change starts a new loop while the old one drains the old registrations.
type loopKey struct{ name, identity string }

// loop runs reconcile passes for one target. It owns the journal attempts whose Target is its name
// and whose Policy carries its identity.
type loop struct {
	sup  *Supervisor
	key  loopKey
	wake chan struct{} // a full pass now (reload, drain, Wake)
	news chan struct{} // a light pass now: a delivery changed the book (Deliver)
	done chan struct{}
	book *jobBook
	edge edge // where the pass meets a fleet's other hosts (edge.go); lone without a fleet

	// Touched only by the loop goroutine.
	last      config.Target // last snapshot of this target with this identity (used while draining)
	backoff   backoffState
	draining  bool                 // as of the previous pass, to report the change once
	quiet     bool                 // the pass is an empty loop's at a stop: nothing to report
	want      int                  // runners the last pass wanted beyond what it had: its claim (room.go)
	ownedLast int                  // attempts it owned after its last pass; -1 unknown (ownsNothing)
	queuedAt  map[string]time.Time // attempt id -> queued time of the job it was launched for (observer.go)
	online    map[string]time.Time // started attempt id -> when GitHub last listed it online or busy (startupExpired)
	finished  map[string]bool      // attempt id -> its runner exited 0 on its own: GitHub removed the registration (observe's Gone)
	launched  map[string]bool      // attempt id -> planned by this loop, so never "adopted" by a recovery pass
	ghosts    map[string]time.Time // busy attempt id -> since when GitHub says its job is over or it is gone (ghostSince; made on first use)
	procs     []Process            // the runner processes of the last pass, watched for their end (Options.ExitCheck)
	ownedSum  string               // what the loop owned after the last pass (ids and states), to see a change
	listNext  bool                 // the next full pass reads the runner list (watch)
	listAfter int                  // full passes until the list is read anyway (listNow)
	diskLow   bool                 // the last launch was refused for min_free_disk (diskRoom)

	status targetStatusBox
	step   stepClock // the current step's start, for the watchdog (Stalled)
}

func newLoop(s *Supervisor, key loopKey, last config.Target) *loop {
	l := &loop{sup: s, key: key, wake: make(chan struct{}, 1), news: make(chan struct{}, 1), done: make(chan struct{}), book: newJobBook(),
		edge: s.edgeFor(), last: last, ownedLast: -1, queuedAt: map[string]time.Time{}, online: map[string]time.Time{}, finished: map[string]bool{}, launched: map[string]bool{}}
	l.status.set(func(st *TargetStatus) { st.Name, st.Identity = key.name, key.identity })
	return l
}

func (l *loop) emit(level slog.Level, attempt string, kind EventKind, msg string) {
	l.sup.events.emit(level, l.key.name, attempt, kind, msg)
}

// poke asks for a pass now without blocking (Wake, Apply, drains).
func (l *loop) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// nudge asks for a light pass now without blocking (Deliver).
func (l *loop) nudge() {
	select {
	case l.news <- struct{}{}:
	default:
	}
}

// snapshot reads the current config for this pass (never a copy taken at start) and says whether
// the loop is draining: its target is gone, disabled or re-pointed, or the daemon is draining.
func (l *loop) snapshot() (cfg *config.Config, t config.Target, draining bool) {
	cfg = l.sup.config()
	if cfg != nil {
		if ct, ok := cfg.Target(l.key.name); ok && ct.IsEnabled() && ct.Identity() == l.key.identity {
			l.last = ct
			return cfg, ct, l.sup.draining()
		}
	}
	return cfg, l.last, true
}

// run is the loop goroutine: recovery first, then passes until drained empty or ctx ends. A full
// pass reads GitHub and sets the time of the next one; light passes (a delivery, a runner's end)
// come in between and leave that time as it is, unless they fail and back off.
func (l *loop) run(ctx context.Context) {
	defer close(l.done)
	defer l.step.park()
	light, due, paced := false, time.Time{}, false
	shallow(func() {
		l.emit(slog.LevelInfo, "", EventLoop, fmt.Sprintf("target loop started for %s", l.key.identity))
		due = l.sup.clock.Now()
		if p := l.sup.deps.Pacer; p != nil {
			// Staggered start: the first full pass (recovery's) waits for this target's place in
			// a window as long as the governor's ceiling needs for every target's first pass, or
			// the interval when shorter. One target starts at once and a thousand do not crowd
			// the governor (e2e TestGovernorAtScale), while recovery after a restart is not put
			// off by a whole interval (TestFirstPassWaitsOnlyForTheCeiling). A wake still cuts
			// the wait short; a delivery gets a light pass before it. Later passes keep to the
			// interval's slots.
			cfg, t, _ := l.snapshot()
			due, paced = due.Add(p.Phase(l.key.name, min(l.interval(cfg, t), p.StartWindow()))), true
		}
	})
	if paced {
		var ok bool
		if light, ok = l.sleep(ctx, due); !ok {
			return
		}
	}
	recovering := true
	for {
		end := false
		shallow(func() { // everything but the sleep, so the loop goroutine's stack stays small
			l.step.begin(l.sup.clock.Now())
			wait, owned, full := l.pass(ctx, recovering, light)
			l.ownedLast = owned
			if ctx.Err() != nil {
				end = true
				return
			}
			if owned >= 0 {
				recovering = false
			}
			if full || l.backoff.class != "" {
				due = l.sup.clock.Now().Add(wait)
			}
			retired := owned == 0 && l.sup.retire(l)
			if h := l.sup.afterPass; h != nil {
				h(l.key)
			}
			if retired {
				if !l.quiet {
					l.emit(slog.LevelInfo, "", EventLoop, "target loop drained and ended")
				}
				end = true
			}
		})
		if end {
			return
		}
		var ok bool
		if light, ok = l.sleep(ctx, due); !ok {
			return
		}
	}
}

// shallow runs f (a pass, or the loop's start) on a goroutine of its own and waits for it. The
// loop goroutine spends nearly all its life parked in sleep, and Go shrinks a parked goroutine's
// stack only while it uses under a quarter of it: a pass run on it would leave each of 1,000 idle
// loops holding the 8 KiB or more its deep call chain grew (about 9 MiB of stacks), where a
// stack that only ever sleeps stays at its starting size and the pass's is freed when it ends
// (issue 28 item 5, TestIdleLoopStacks).
func shallow(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// sleep waits for the next pass: a full one at due or on a wake (reload, drain), a light one on a
// delivery or when a watched runner process ended. While rate-limited neither shortens the wait,
// since a pass could only spend budget GitHub has refused. ok is false when ctx ended.
func (l *loop) sleep(ctx context.Context, due time.Time) (light, ok bool) {
	l.step.park()
	for {
		left := due.Sub(l.sup.clock.Now())
		if left <= 0 {
			return false, true
		}
		d, check := left, l.sup.opts.ExitCheck > 0 && len(l.procs) > 0
		if check && l.sup.opts.ExitCheck < d {
			d = l.sup.opts.ExitCheck
		} else {
			check = false
		}
		timer, stop := l.sup.clock.Timer(d)
		select {
		case <-ctx.Done():
			stop()
			return false, false
		case <-timer:
			if !check {
				return false, true
			}
			if l.ended() {
				return true, true
			}
		case <-l.wake:
			stop()
			if !l.rateLimited() {
				return false, true
			}
		case <-l.news:
			stop()
			if !l.rateLimited() {
				// In a fleet a delivery asks for a full pass: a follower's reads the leader's
				// view (which the delivery's Announce had the leader read anew), and a fleet's
				// light pass acts on no demand (edge.servesLight).
				return l.edge.servesLight(), true
			}
		}
	}
}

func (l *loop) rateLimited() bool {
	return l.backoff.class == ClassRateLimited && l.backoff.until.After(l.sup.clock.Now())
}

// ended reports whether a runner process of the last pass has ended (a local check, no GitHub).
func (l *loop) ended() bool {
	for _, p := range l.procs {
		if alive, err := l.sup.deps.Launcher.Alive(p); err == nil && !alive {
			return true
		}
	}
	return false
}

// pass is one reconcile pass. It returns the time to the next pass, how many attempts the loop
// still owns (-1 when the journal could not be read) and whether it was a full pass. A light one
// (asked for by a delivery or a runner's end, never while draining) reads nothing from GitHub:
// its demand is the book's, and what deliveries said of this host's runners stands in for the
// runner list, so a queued delivery costs one JIT registration. decide needs no list to be safe
// (an attempt the list would settle waits for the next full pass), so a light pass may come
// before the first full one: a delivery does not wait for an organization's first read. In a
// fleet a light pass (a runner's end only) plans on the fleet's current view (edge.light).
func (l *loop) pass(ctx context.Context, recovering, light bool) (time.Duration, int, bool) {
	cfg, t, draining := l.snapshot()
	s := l.sup
	// A draining loop that owns nothing has nothing to ask GitHub, unless this run gave up a
	// registration request of its identity (doubt): its list read then finds a late one. At a
	// shutdown not even that, since the stop's last sweep reads the doubted targets, and such a
	// loop ends silently: a stop with thousands of empty targets logs nothing per target and sends
	// nothing to GitHub for them (TestStopReadsOnlyDoubtedTargets; e2e TestGovernorAtScale: 100
	// empty targets' reads at 1 point a second held an organization's ended runner past the
	// bound, left for recovery).
	empty := draining && !l.readsWhenEmpty() && l.ownsNothing(ctx)
	l.quiet = empty && s.drain.Load() == drainShutdown
	if l.quiet {
		return s.opts.DrainPoll, 0, true // it retires now: nothing to conclude, plan or report
	}
	if draining && !l.draining {
		l.emit(slog.LevelInfo, "", EventLoop, "target loop draining: starting nothing new, deregistering idle runners, letting busy ones finish")
	}
	l.draining = draining
	light = light && !draining
	now, poll, monitor := s.clock.Now(), l.interval(cfg, t), t.Mode == "monitor"
	// cctx bounds the pass's GitHub calls, not its journal reads: a pass the request governor
	// slowed to its call timeout has not found a failing state dir.
	cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()

	var gh githubView
	switch {
	case light:
		var rd via
		rd, gh = l.edge.light(t, l.bookView(), l.book)
		gh.via = rd
	case empty:
		gh = githubView{at: now, via: l.edge.quiet(t)}
	default:
		var cut bool
		if gh, cut = l.read(ctx, cctx, t, recovering, draining); cut {
			return 0, -1, true // the drain pass comes next, at once
		}
	}
	wait, owned := l.reconcilePass(ctx, cctx, cfg, t, now, poll, draining, monitor, recovering, gh)
	return wait, owned, !light
}

// reconcilePass acts on what the pass learned: conclude, plan, reap, launch.
func (l *loop) reconcilePass(ctx, cctx context.Context, cfg *config.Config, t config.Target, now time.Time, poll time.Duration,
	draining, monitor, recovering bool, gh githubView) (time.Duration, int) {
	s := l.sup
	passErr := gh.err
	keep := func(err error) {
		if err != nil && passErr == nil {
			passErr = err
		}
	}
	live, err := s.deps.Journal.Live(ctx)
	if err != nil {
		return l.journalFailed(ctx, now, poll, draining, gh.demand, t, err)
	}
	for _, a := range l.owned(live) {
		if ctx.Err() != nil {
			return 0, -1 // stopped: the rest is the next daemon's recovery
		}
		l.step.begin(s.clock.Now()) // recovery and drains report progress per runner
		_, err := l.reconcile(ctx, t, a, &gh, recovering)
		keep(err)
	}
	if gh.listed && !monitor {
		keep(s.deleteOrphans(cctx, t, gh.regs, live))
	}
	// Re-read: reconcile concluded some attempts and capacity must count what is left.
	if live, err = s.deps.Journal.Live(ctx); err != nil {
		return l.journalFailed(ctx, now, poll, draining, gh.demand, t, err)
	}
	owned := l.owned(live)
	in := l.planInput(cfg, t, now, owned, live, gh.byName, gh.demand)
	in.Monitor, in.Draining, in.Here = monitor, draining, gh.fleetLight
	l.claim(cfg, t, live, &in, gh.err == nil)
	launching := gh.err == nil && !draining && !monitor
	out := gh.via.decide(cctx, t, in, launching, l.listNext)
	for _, r := range out.Reap {
		if ctx.Err() != nil {
			return 0, -1
		}
		keep(l.reapIdle(ctx, t, owned, r, &gh, draining))
	}
	if launching {
		waits := jobWaits(gh.jobs, in.Starting+len(in.Idle)-len(out.Reap))
		keep(l.launchN(ctx, cfg, t, out.Start, waits))
	}
	if ctx.Err() != nil {
		return 0, -1
	}
	if live, err = s.deps.Journal.Live(ctx); err == nil {
		owned = l.owned(live)
		l.observeRunners(live)
		l.watch(owned) // before publish: a fleet host publishes whether it waits for a list
		// ctx, not cctx: publishing is an etcd write, and cctx may have run out in a pass whose
		// launches the request governor paced past the call timeout.
		gh.via.publish(ctx, t, func() planInput { return l.planInput(cfg, t, l.sup.clock.Now(), owned, live, gh.byName, 0) }, launching, l.listNext)
	}
	return l.byChange(l.finish(now, poll, draining, gh.demand, owned, passErr), in.Change), len(owned)
}

// watch remembers the runner processes the loop owns, for the exit check between passes, and
// lets the book forget what deliveries said of runners that are gone. It also decides whether the
// next full pass must read the runner list: after a launch or an exit (what the loop owns
// changed), and while an attempt is inside its startup window (starting, or started and not yet
// listed online: startup_timeout needs the list).
func (l *loop) watch(owned []journal.Attempt) {
	l.procs = l.procs[:0]
	names := make(map[string]bool, len(owned))
	var sum strings.Builder
	starting := false
	for _, a := range owned {
		names[a.RunnerName] = true
		sum.WriteString(a.ID + "=" + string(a.State) + ";")
		if a.ShimPID != 0 && (a.State == journal.StateStarted || a.State == journal.StateBusy) {
			l.procs = append(l.procs, processOf(a))
		}
		_, online := l.online[a.ID]
		switch a.State {
		case journal.StatePlanned, journal.StateRegistered:
			starting = true
		case journal.StateStarted:
			starting = starting || !online
		}
	}
	l.book.keep(names)
	l.listNext = l.listNext || starting || sum.String() != l.ownedSum
	l.ownedSum = sum.String()
}

// listEvery is how often a full pass reads the runner list when nothing asks for it sooner
// (watch): every 5th pass, so an idle target's pass costs its demand reads only.
const listEvery = 5

// listNow says whether this full pass reads the runner list: at recovery, while draining, when
// watch asked for it, and otherwise every listEvery-th pass. In a fleet edge.begin has the last
// word: the leader follows these rules and also lists for the other hosts that ask, so a fleet of
// one reads what a lone host does; a follower's list is the leader's latest.
func (l *loop) listNow(recovering, draining bool) bool {
	l.listAfter--
	if !recovering && !draining && !l.listNext && l.listAfter > 0 {
		return false
	}
	l.listNext, l.listAfter = false, listEvery
	return true
}

// readsWhenEmpty says whether a draining loop that owns nothing still reads GitHub (pass): only
// for a registration request of its identity this run gave up (doubt), and not at a shutdown.
func (l *loop) readsWhenEmpty() bool {
	return l.sup.drain.Load() != drainShutdown && l.sup.doubted(l.key.identity)
}

// ownsNothing reports whether the journal holds no live attempt of this loop. Only the loop's own
// launches add one, so a loop whose last pass ended owning none (or that started owning none)
// knows without a read: a stop of thousands of idle targets costs no journal read each. A failed
// read answers false: the pass then reads as usual and reports the journal's failure.
func (l *loop) ownsNothing(ctx context.Context) bool {
	if l.ownedLast == 0 {
		return true
	}
	live, err := l.sup.deps.Journal.Live(ctx)
	return err == nil && len(l.owned(live)) == 0
}

// journalFailed ends a pass whose journal read failed. A read cut by a stop is not a failure of
// the state dir and is not reported as one.
func (l *loop) journalFailed(ctx context.Context, now time.Time, poll time.Duration, draining bool, demand int, t config.Target, err error) (time.Duration, int) {
	if ctx.Err() != nil {
		return 0, -1
	}
	return l.finish(now, poll, draining, demand, nil, fmt.Errorf("read journal for target %s: %w; check the state dir", t.Name, err)), -1
}

// launchN launches up to n runners, stopping at the first refusal of a slot or failure, and as
// soon as a drain begins or the loop is stopped. The i-th runner is for the job queued at
// waits[i], if there is one (scale-up latency, observer.go).
func (l *loop) launchN(ctx context.Context, cfg *config.Config, t config.Target, n int, waits []time.Time) error {
	if n <= 0 {
		return nil
	}
	if err := l.diskRoom(cfg, t); err != nil {
		return err
	}
	policy := fingerprintWith(l.sup.opts.PolicyKey, t)
	for i := range n {
		var queuedAt time.Time
		if i < len(waits) {
			queuedAt = waits[i]
		}
		started, err := l.sup.launching(func() error { return l.launch(ctx, cfg, t, policy, queuedAt) })
		if !started || ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, journal.ErrNoCapacity) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// interval is the target's poll interval, as the pacer stretches it.
func (l *loop) interval(cfg *config.Config, t config.Target) time.Duration {
	poll := PollInterval(cfg, t)
	if p := l.sup.deps.Pacer; p != nil {
		poll = p.Interval(l.key.name, poll)
	}
	return poll
}

// nextPass is the wait from end to the next full pass of a pass that began at start: at most
// one interval (the pacer's, stretched when the account cannot afford more) plus a tenth of it
// after start, however long the pass took, so a job queued just after this pass read the jobs
// waits at most that long. Counting from end instead let a pass that launched for a burst push
// the next one a whole slot later (TestNextPassAtMostAnIntervalAfterTheLast). Without a pacer it
// is the interval jittered by up to a tenth either way; with one, the target's next slot at least
// a tenth of an interval after start, so a pass woken just before its slot (a reload) does not
// read again at the slot. A pass longer than an interval is followed by the first slot from its
// end: the reads are then the bound, and back-to-back passes would only queue in the governor.
func (l *loop) nextPass(start, end time.Time, interval time.Duration) time.Duration {
	took := end.Sub(start)
	if l.sup.deps.Pacer == nil {
		return max(jitter(l.sup.rand, interval)-took, 0)
	}
	if wait := l.slotWait(start, interval, interval/10) - took; wait >= 0 {
		return wait
	}
	return l.slotWait(end, interval, 0)
}

// slotWait is the wait from now to this target's next pass slot at least gap away, so passes of
// all targets fall evenly over their interval instead of together.
func (l *loop) slotWait(now time.Time, interval, gap time.Duration) time.Duration {
	phase := l.sup.deps.Pacer.Phase(l.key.name, interval)
	from := time.Duration(now.Add(gap).UnixNano()) - phase
	slot := (from + interval - 1) / interval * interval
	return slot + phase - time.Duration(now.UnixNano())
}

// PollInterval is the configured poll interval of t: its own, else the webhook's slow poll when
// deliveries wake it, else the daemon's, else 30 s.
func PollInterval(cfg *config.Config, t config.Target) time.Duration {
	poll := t.PollInterval.D()
	if cfg != nil {
		poll = cfg.PollIntervalOf(t)
	}
	if poll <= 0 {
		poll = 30 * time.Second
	}
	return poll
}

// owned filters the attempts of this loop: its target name and identity.
func (l *loop) owned(live []journal.Attempt) []journal.Attempt {
	var out []journal.Attempt
	for _, a := range live {
		if a.Target == l.key.name && policyIdentity(a.Policy) == l.key.identity {
			out = append(out, a)
		}
	}
	return out
}

func (l *loop) planInput(cfg *config.Config, t config.Target, now time.Time, owned, live []journal.Attempt, regs map[string]Runner, demand int) planInput {
	// The schedule's min_idle and max_runners at the pass's clock time; the bound in force is
	// what the target's room below (and its fair share of the host) counts against.
	force := t.InForce(now)
	t.MaxRunners = force.MaxRunners
	in := planInput{Now: now, Demand: demand, MinIdle: force.MinIdle, IdleTimeout: t.IdleTimeout.D(), Change: force.Next}
	policy := policiesFor(l.sup.opts.PolicyKey, t)
	for _, a := range owned {
		switch a.State {
		case journal.StatePlanned, journal.StateRegistered:
			in.Starting++
		case journal.StateStarted:
			if r, ok := regs[a.RunnerName]; ok && r.Busy {
				continue
			}
			in.Idle = append(in.Idle, idleRunner{ID: a.ID, IdleSince: a.UpdatedAt, Stale: !policy.matches(a.Policy)})
		}
	}
	// The one owner of room for a target (journal.Room): the target's hard room, and the host's
	// bounded by the target's fair share of it (room.go).
	in.TargetFree, in.HostFree = l.sup.room(cfg, journal.RoomOf(0, live), t, l.want)
	return in
}

// reapIdle deregisters an idle runner first; only once GitHub accepted (so it cannot take a job any
// more) is the process stopped. A busy answer means it just took a job: it is left to finish.
func (l *loop) reapIdle(ctx context.Context, t config.Target, owned []journal.Attempt, r reap, gh *githubView, draining bool) error {
	var a journal.Attempt
	for _, o := range owned {
		if o.ID == r.ID {
			a = o
		}
	}
	if a.ID == "" || a.State != journal.StateStarted {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.sup.opts.CallTimeout)
	defer cancel()
	ended, err := l.unlessItEnds(ctx, a, func(ctx context.Context) error {
		return l.sup.deps.Registrar.DeleteRunner(ctx, t, a.RunnerID)
	})
	if ended {
		return nil // it ran a job after all, and ended: nothing to deregister or stop
	}
	if errors.Is(err, ErrRunnerBusy) {
		_, err = l.markBusy(ctx, a, gh.jobOf[a.RunnerName], fmt.Sprintf("runner %s took a job while being reaped (%s); it will be left to finish", a.RunnerName, r.Reason))
		return err
	}
	if err != nil {
		if draining {
			// Without GitHub's word the runner cannot be stopped; a drain does not wait for GitHub
			// but leaves it to the next daemon's recovery, as a stop does (drain.go, leftForRecovery).
			l.sup.leave(a.ID)
		}
		return fmt.Errorf("deregister idle runner %s of target %s: %w", a.RunnerName, t.Name, err)
	}
	a, err = l.transition(ctx, a, journal.StateDeregistered, nil, fmt.Sprintf("idle runner %s deregistered: %s", a.RunnerName, r.Reason))
	if err != nil {
		return err
	}
	l.sup.crash(CrashAfterDeregister, a.ID)
	if err := l.sup.deps.Launcher.Stop(ctx, processOf(a)); err != nil {
		return fmt.Errorf("stop idle runner %s (pid %d) of target %s: %w", a.RunnerName, a.ShimPID, t.Name, err)
	}
	return nil
}

// deleteOrphans removes registrations named after this host that no live attempt accounts for
// (any target's: several targets may share an organization). Other hosts' runners are never touched.
func (s *Supervisor) deleteOrphans(ctx context.Context, t config.Target, regs []Runner, live []journal.Attempt) error {
	known := make(map[string]bool, len(live))
	for _, a := range live {
		known[a.RunnerName] = true
	}
	prefix := journal.RunnerNamePrefix + s.opts.HostID + "-"
	for _, r := range regs {
		if !strings.HasPrefix(r.Name, prefix) || known[r.Name] || r.Busy {
			continue
		}
		err := s.deps.Registrar.DeleteRunner(ctx, t, r.ID)
		if errors.Is(err, ErrRunnerBusy) {
			continue
		}
		if err != nil {
			return fmt.Errorf("delete orphan registration %s of target %s: %w", r.Name, t.Name, err)
		}
		s.events.emit(slog.LevelInfo, t.Name, "", EventOrphan, fmt.Sprintf("registration %s (id %d) had no live runner on this host: deleted", r.Name, r.ID))
	}
	return nil
}

// markBusy records that started attempt a took a job (jobID, when GitHub's jobs list showed it:
// `runner-manager runners` shows it); the attempt is never stopped or deregistered again, unless it
// runs past max_job_duration or turns out a ghost (ends.go).
func (l *loop) markBusy(ctx context.Context, a journal.Attempt, jobID int64, msg string) (journal.Attempt, error) {
	n, err := l.transition(ctx, a, journal.StateBusy, func(x *journal.Attempt) { x.JobID = jobID }, msg)
	if err == nil {
		l.observeBusy(a, l.sup.clock.Now())
	}
	l.sup.crash(CrashAfterBusy, a.ID)
	return n, err
}

// transition writes one journal step and emits its event.
func (l *loop) transition(ctx context.Context, a journal.Attempt, to journal.State, update func(*journal.Attempt), msg string) (journal.Attempt, error) {
	n, err := l.sup.deps.Journal.Transition(ctx, a.ID, to, update)
	if err != nil {
		return a, fmt.Errorf("journal %s -> %s for attempt %s of target %s: %w", a.State, to, a.ID, l.key.name, err)
	}
	if supplied(a.State) && (to == journal.StateBusy || to == journal.StateExited) {
		l.edge.tookJob() // a job taken (or, conservatively, an end): the fleet's view must see it
	}
	level := slog.LevelInfo
	if to == journal.StateFailed {
		level = slog.LevelWarn
	}
	l.emit(level, a.ID, EventKind(to), msg)
	return n, nil
}

// supplied says whether an attempt in state s counts as supply: starting or idle (planInput).
func supplied(s journal.State) bool {
	return s == journal.StatePlanned || s == journal.StateRegistered || s == journal.StateStarted
}

// noteWarning shows a demand read in part in status, with an event when it starts or changes
// and when it clears, not on every pass.
func (l *loop) noteWarning(warn string) {
	var prev string
	l.status.set(func(st *TargetStatus) { prev, st.Warning = st.Warning, warn })
	switch {
	case warn != "" && warn != prev:
		l.emit(slog.LevelWarn, "", EventDemandPartial, warn)
	case warn == "" && prev != "":
		l.emit(slog.LevelInfo, "", EventDemandPartial, "every repository's jobs can be read again")
	}
}
