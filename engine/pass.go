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
