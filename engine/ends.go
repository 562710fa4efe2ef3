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

// Every runner ends (issue 30): a busy runner is ended by the engine in two cases only, decided
// by decide from what the pass already read (no request of its own):
//   - max_job_duration: it has been busy longer than its target's max_job_duration;
//   - ghost: its process lives while GitHub says its job completed (a delivery, a scale set's
//     JobCompleted) or no longer lists it at all, for longer than the target's startup_timeout.
//
// The end is journal first: the attempt is recorded failed with the reason, then its runner is
// asked to stop (SIGTERM: actions/runner cancels its job), then, if it is still alive killGrace
// later, killed. Once its process has ended it is deregistered (a registration GitHub still
// holds busy is left for GitHub to fail the job and remove, and for the orphan sweep) and
// cleaned like any failed attempt.

// killGrace is how long a runner stopped for cause has, after SIGTERM, before it is killed.
// actions/runner gives a cancelled job's processes 7.5 s (SIGINT) and 2.5 s more (SIGTERM)
// before it kills them; 15 s lets it finish that and report the job. TestHungRunnerIsKilled.
const killGrace = 15 * time.Second

// Killer is the optional Launcher extension that ends a runner which ignored a stop (a hung
// job): the runner process and everything it started, at once. Without it the engine can
// only ask again.
type Killer interface {
	Kill(ctx context.Context, p Process, runtimeDir string) error
}

// endedForCause reports whether failed attempt a was ended by the engine for one of the reasons
// above: its runner may be stopped although GitHub still lists it busy, and a busy answer to its
// DELETE does not hold it (the process is gone; the job is GitHub's to fail).
func endedForCause(a journal.Attempt) bool {
	return a.State == journal.StateFailed &&
		(strings.HasPrefix(a.Reason, ReasonMaxJobDuration+":") || strings.HasPrefix(a.Reason, ReasonGhost+":"))
}

// overrun says whether busy attempt a has been busy for its target's max_job_duration (0: no
// bound). Busy is counted from the busy record, which the pass that saw the job taken wrote, so
// a job may run up to one poll interval longer than the bound before it is ended.
func overrun(t config.Target, a journal.Attempt, now time.Time) bool {
	d := t.MaxJobDuration.D()
	return a.State == journal.StateBusy && d > 0 && now.Sub(a.UpdatedAt) >= d
}

// ghostSince tracks, for busy attempt a, since when GitHub has said it no longer runs a job of
// this runner, and reports whether that has lasted the target's startup_timeout (the time a
// runner is given to be listed as it should, here to exit after its job). The evidence is what
// the pass read: a delivery (or a scale set's JobCompleted) for its job, or a runner list that
// answered without it, read after the busy record (for a scale set, the registrations its queue's
// messages leave).
// A list that shows it again clears the mark; a pass that read no list leaves it as it was. In
// memory only: after a restart the grace starts again.
func (l *loop) ghostSince(t config.Target, a journal.Attempt, o observation, now time.Time) bool {
	if a.State != journal.StateBusy || !o.HasProcess || !o.Alive || o.Exit.Exited {
		delete(l.ghosts, a.ID)
		return false
	}
	switch {
	case o.Gone, o.ListKnown && !o.Listed && o.ListAt.After(a.UpdatedAt):
		if l.ghosts == nil {
			l.ghosts = map[string]time.Time{}
		}
		if _, ok := l.ghosts[a.ID]; !ok {
			l.ghosts[a.ID] = now
		}
	case o.ListKnown:
		delete(l.ghosts, a.ID)
		return false
	}
	since, ok := l.ghosts[a.ID]
	return ok && now.Sub(since) >= startupTimeout(t)
}

// endBusy records busy attempt a failed for cause and asks its runner to stop. The record comes
// first: a crash after it leaves a failed attempt whose next pass stops the runner again.
func (l *loop) endBusy(ctx context.Context, t config.Target, a journal.Attempt, o observation) (journal.Attempt, bool, error) {
	var reason, kind string
	if o.Ghost {
		kind = ReasonGhost
		reason = fmt.Sprintf("%s: runner %s is alive, but GitHub has said for startup_timeout (%s) that its job completed or that the runner is gone; stopping it",
			ReasonGhost, a.RunnerName, startupTimeout(t))
	} else {
		kind = ReasonMaxJobDuration
		reason = fmt.Sprintf("%s: runner %s has been busy for max_job_duration (%s) of target %s; stopping it (its job fails at GitHub), raise max_job_duration if such jobs are expected",
			ReasonMaxJobDuration, a.RunnerName, t.MaxJobDuration.D(), t.Name)
	}
	n, err := l.transition(ctx, a, journal.StateFailed, func(x *journal.Attempt) { x.Reason = reason }, reason)
	if err != nil {
		return a, true, err
	}
	delete(l.ghosts, a.ID)
	l.runnerFailed(kind)
	if err := l.sup.deps.Launcher.Stop(ctx, o.Process); err != nil {
		return n, true, fmt.Errorf("stop runner %s (pid %d): %w", a.RunnerName, o.Process.PID, err)
	}
	return n, true, nil // it ends in its own time; a later pass sees the exit, or kills it
}

// kill ends a runner stopped for cause that outlived killGrace.
func (l *loop) kill(ctx context.Context, a journal.Attempt, o observation) (journal.Attempt, bool, error) {
	k, ok := l.sup.deps.Launcher.(Killer)
	if !ok {
		return a, true, l.sup.deps.Launcher.Stop(ctx, o.Process)
	}
	if err := k.Kill(ctx, o.Process, a.RuntimeDir); err != nil {
		return a, true, fmt.Errorf("kill runner %s (pid %d), which ignored a stop for %s: %w", a.RunnerName, o.Process.PID, killGrace, err)
	}
	l.emit(slog.LevelWarn, a.ID, EventFailed, fmt.Sprintf("runner %s did not end within %s of its stop: killed", a.RunnerName, killGrace))
	return a, true, nil
}

// deregisterEnded concludes the registration of a runner ended for cause whose DELETE answered
// busy: its process is gone, so the job it held fails at GitHub, which then removes the
// registration; were it still there later, the orphan sweep deletes it.
func (l *loop) deregisterEnded(ctx context.Context, a journal.Attempt, err error) (journal.Attempt, bool, error) {
	if !errors.Is(err, ErrRunnerBusy) {
		return a, true, err
	}
	n, terr := l.transition(ctx, a, journal.StateDeregistered, nil,
		fmt.Sprintf("runner %s ended; GitHub still lists it busy until it fails its job, then removes it (or the orphan sweep deletes it)", a.RunnerName))
	return n, terr != nil, terr
}
