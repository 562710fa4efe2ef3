package engine

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/runner-manager/runner-manager/config"
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
