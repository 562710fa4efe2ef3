package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// launch starts one runner. Every side effect is preceded by a synced journal record of the intent:
// Plan (slot) -> JIT -> registered (runner id, runtime dir) -> prepare + Start -> started (pid).
// A failure after Plan records failed and concludes at once what was done (deregister, remove dir);
// a crash instead leaves the record for recovery, which decides from it.
func (l *loop) launch(ctx context.Context, cfg *config.Config, t config.Target, policy string, queuedAt time.Time) error {
	s := l.sup
	a, err := s.plan(ctx, journal.PlanRequest{
		Target: t.Name, Policy: policy, Labels: t.Labels,
		HostMax: cfg.Daemon.MaxRunners, TargetMax: t.MaxRunners,
	})
	if errors.Is(err, journal.ErrNoCapacity) {
		return err
	}
	if err != nil {
		return fmt.Errorf("lease a runner slot for target %s: %w; check the state dir", t.Name, err)
	}
	l.launched[a.ID] = true
	l.ownedLast = -1 // a light pass inside a full one's read launched: the full pass does not know
	l.emit(slog.LevelInfo, a.ID, EventPlanned, fmt.Sprintf("launching runner %s in slot %d", a.RunnerName, a.Slot))
	s.crash(CrashAfterPlan, a.ID)

	workDir, own := attemptWorkDir(t, a.ID)
	jctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	// A shutdown starts nothing new: a registration still waiting (for the request governor's
	// points) is given up rather than made during the drain, where its runner's deregistration
	// could miss the bound. One already sent is cut like a lost answer (below).
	go func() {
		select {
		case <-s.shutdownCh:
			cancel()
		case <-jctx.Done():
		}
	}()
	reg, err := s.deps.Registrar.JITConfig(jctx, t, JITRequest{Name: a.RunnerName, Labels: t.Labels, RunnerGroup: t.RunnerGroup, WorkDir: workDir})
	cancel()
	if errors.Is(err, ErrRunnerNameTaken) {
		s.doubt(t)
		return l.nameTaken(ctx, t, a, err)
	}
	if errors.Is(err, ErrNotSent) {
		return l.notSent(ctx, a, err)
	}
	if err != nil {
		s.doubt(t) // it may land after its attempt is concluded: the stop's sweep reads t

		err = fmt.Errorf("create JIT registration for %s of target %s: %w", a.RunnerName, t.Name, err)
		// The request may have reached GitHub; a later pass looks the name up and deletes it.
		return l.abandon(ctx, t, a, err, ReasonLaunchFailed)
	}
	s.crash(CrashAfterJIT, a.ID)

	dir := filepath.Join(s.opts.RuntimeRoot, a.ID)
	a, err = l.transition(ctx, a, journal.StateRegistered, func(x *journal.Attempt) {
		x.RunnerID, x.RuntimeDir = reg.RunnerID, dir
		if cl, ok := s.deps.Launcher.(CgroupLauncher); ok {
			x.Cgroup = cl.CgroupPath(a.ID) // journaled before Start creates it
		}
		if own {
			x.WorkDir = workDir // journaled before Start creates it, so cleanup and recovery remove it
		}
		if cfg.ExecutorOf(t) == config.ExecutorContainer {
			x.Container = a.RunnerName // journaled before Start creates it, so recovery finds and removes it
		}
	}, fmt.Sprintf("runner %s registered (id %d)", a.RunnerName, reg.RunnerID))
	if err != nil {
		// Not journaled: the planned record still leads recovery to the registration by name.
		s.doubt(t)
		return err
	}
	s.crash(CrashAfterRegistered, a.ID)

	// The package and process must be up within startup_timeout of the registered record, as the
	// runner must then come online within it of the started one (startupExpired).
	sctx, cancel := s.clockContext(ctx, startupTimeout(t))
	proc, err := l.start(sctx, t, a, reg, cfg.LimitsOf(t))
	expired := sctx.Err() != nil && ctx.Err() == nil
	cancel()
	if expired {
		return l.abandon(ctx, t, a, fmt.Errorf("%s: runner %s of target %s did not start within startup_timeout (%s); a slow runner download needs a longer startup_timeout: %w",
			ReasonRegistrationTimedOut, a.RunnerName, t.Name, startupTimeout(t), err), ReasonRegistrationTimedOut)
	}
	if err != nil {
		return l.abandon(ctx, t, a, err, launchReason(err))
	}
	s.crash(CrashAfterStart, a.ID)

	a, err = l.transition(ctx, a, journal.StateStarted, func(x *journal.Attempt) {
		x.ShimPID, x.ShimStart = proc.PID, proc.StartTime
	}, fmt.Sprintf("runner %s started (pid %d)", a.RunnerName, proc.PID))
	if err != nil {
		// The shim runs and wrote its state file: the next pass attaches it from there.
		return err
	}
	l.observeStarted(a, queuedAt)
	s.crash(CrashAfterStarted, a.ID)
	return nil
}

// start has no deadline of its own: the first use of a runner version downloads it, and the
// launcher bounds that itself; a stop cancels ctx.
func (l *loop) start(ctx context.Context, t config.Target, a journal.Attempt, reg Registration, limits config.Limits) (Process, error) {
	lc := l.sup.deps.Launcher
	if err := lc.Prepare(ctx, t, a.RuntimeDir); err != nil {
		return Process{}, fmt.Errorf("prepare runner %s (version %s) for target %s: %w", a.RunnerName, t.RunnerVersion, t.Name, err)
	}
	workDir, _ := attemptWorkDir(t, a.ID)
	proc, err := lc.Start(ctx, LaunchSpec{AttemptID: a.ID, RuntimeDir: a.RuntimeDir, JITConfig: reg.JITConfig, Env: t.Env, WorkDir: workDir, Slot: a.Slot,
		Limits: limits, Container: a.Container, Target: t})
	if err != nil {
		return Process{}, fmt.Errorf("start runner %s for target %s: %w", a.RunnerName, t.Name, err)
	}
	return proc, nil
}

// launchReason is the failure reason of a launch that failed with err: the launcher's own
// (a container's image_missing, container_runtime_unavailable, runner_dependency_missing), else
// launch_failed.
func launchReason(err error) string {
	var r interface{ FailureReason() string }
	if errors.As(err, &r) && r.FailureReason() != "" {
		return r.FailureReason()
	}
	return ReasonLaunchFailed
}

// abandon records failed with the cause, counts the failure under reason, then concludes whatever
// it can right away. It returns cause, so the pass backs off by the class of what went wrong.
func (l *loop) abandon(ctx context.Context, t config.Target, a journal.Attempt, cause error, reason string) error {
	// A launch cut short by a stop still records why and undoes what it did.
	ctx, cancel := l.sup.cleanupContext(ctx)
	defer cancel()
	a, err := l.transition(ctx, a, journal.StateFailed, func(x *journal.Attempt) { x.Reason = cause.Error() }, cause.Error())
	if err != nil {
		return errors.Join(cause, err)
	}
	l.runnerFailed(reason)
	if a.RunnerID != 0 {
		if _, err := l.reconcile(ctx, t, a, &githubView{}, false); err != nil {
			return errors.Join(cause, err)
		}
	}
	return cause
}

// notSent concludes an attempt whose registration request never left this host: GitHub has
// nothing of it, so it needs no lookup by name. At a shutdown that is the drain's doing, not a
// failure of the target; otherwise (the call timeout ran out in the governor) the pass backs off.
func (l *loop) notSent(ctx context.Context, a journal.Attempt, cause error) error {
	ctx, cancel := l.sup.cleanupContext(ctx)
	defer cancel()
	reason := fmt.Sprintf("runner %s not registered: %v", a.RunnerName, cause)
	if _, err := l.transition(ctx, a, journal.StateCleaned, func(x *journal.Attempt) { x.Reason = reason }, reason); err != nil {
		return errors.Join(cause, err)
	}
	if l.sup.drain.Load() == drainShutdown {
		return nil
	}
	l.runnerFailed(ReasonLaunchFailed)
	return cause
}

// nameTaken handles a registration refused because the name exists: an earlier try of the same
// request (timed out or answered 5xx, then retried) did register it. The registration is found by
// name and deleted. Nothing is wrong with the target, so it does not back off.
func (l *loop) nameTaken(ctx context.Context, t config.Target, a journal.Attempt, cause error) error {
	ctx, cancel := l.sup.cleanupContext(ctx)
	defer cancel()
	regs, err := l.sup.deps.Registrar.Runners(ctx, t)
	if err != nil {
		return l.abandon(ctx, t, a, fmt.Errorf("runner %s of target %s was registered by an earlier try, and listing the runners to find it failed: %w", a.RunnerName, t.Name, err), ReasonLaunchFailed)
	}
	var id int64
	for _, r := range regs {
		if r.Name == a.RunnerName {
			id = r.ID
		}
	}
	reason := fmt.Sprintf("runner %s was already registered (id %d) by an earlier try of the request: %v; deleting it; the next pass launches another", a.RunnerName, id, cause)
	a, err = l.transition(ctx, a, journal.StateFailed, func(x *journal.Attempt) { x.RunnerID, x.Reason = id, reason }, reason)
	if err != nil {
		return err
	}
	if id == 0 {
		return nil // not listed (yet): the failed attempt waits for its lookup like a lost answer
	}
	_, err = l.reconcile(ctx, t, a, &githubView{}, false)
	return err
}

// finish records the pass in the target's status and picks the wait before the next pass.
func (l *loop) finish(now time.Time, poll time.Duration, draining bool, demand int, owned []journal.Attempt, passErr error) time.Duration {
	s := l.sup
	// The loop sleeps from the pass's end, so backoff deadlines and LastPass count from there: a
	// pass that spent 15 s in retries would otherwise report a backoff already over.
	end := s.clock.Now()
	wait := l.nextPass(now, end, poll)
	if draining {
		wait = s.opts.DrainPoll
	}
	if passErr != nil {
		wait = l.backoff.next(passErr, end, poll, s.rand)
		if draining {
			wait = min(wait, s.opts.DrainPoll*10)
		}
		l.emit(slog.LevelWarn, "", EventBackoff, fmt.Sprintf("pass failed, next try in %s: %v", wait.Round(time.Millisecond), passErr))
	} else {
		l.backoff.reset()
	}
	l.observePass(now, passErr)
	var busy, idle, starting int
	for _, a := range owned {
		switch a.State {
		case journal.StateBusy:
			busy++
		case journal.StateStarted:
			idle++
		case journal.StatePlanned, journal.StateRegistered:
			starting++
		}
	}
	b := l.backoff
	l.status.set(func(st *TargetStatus) {
		st.Mode, st.Draining, st.Demand, st.LastPass = l.last.Mode, draining, demand, end
		st.Owned, st.Busy, st.Idle, st.Starting = len(owned), busy, idle, starting
		st.Backoff, st.BackoffUntil, st.LastError = string(b.class), b.until, ""
		if passErr != nil {
			st.LastError = passErr.Error()
		}
	})
	return wait
}

// attemptWorkDir is the work directory of attempt id of t and whether it is the attempt's own
// (removed with its runtime directory): "" (inside the runtime directory) without work_dir,
// work_dir itself when shared_work_dir is set, else <work_dir>/<id>.
func attemptWorkDir(t config.Target, id string) (string, bool) {
	switch {
	case t.WorkDir == "":
		return "", false
	case t.SharedWorkDir:
		return t.WorkDir, false
	}
	return filepath.Join(t.WorkDir, id), true
}
