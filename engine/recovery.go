package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// observation is what the engine can see of one attempt right now: its process, its exit status,
// and (when the GitHub list answered) its registration.
type observation struct {
	Process    Process // journaled, or read from the shim state file when the journal has none
	HasProcess bool
	Alive      bool
	Exit       ExitStatus
	ListKnown  bool      // GitHub's runner list answered this pass
	ListAt     time.Time // when that list was asked for
	Listed     bool      // a registration with the attempt's runner name exists
	ListedID   int64
	ListedBusy bool
	// Settled: the list was taken late enough that a registration request made for the attempt has
	// been answered or given up on: absence is final (Supervisor.settled).
	Settled bool
	// StartupExpired: started, and GitHub has not listed it online or busy for the target's
	// startup_timeout (since its start, or since it was last listed online).
	StartupExpired bool
	JobID          int64 // the job GitHub's jobs list (or a delivery) shows the runner running, if any
	// Told: a workflow_job delivery said the runner took a job (in_progress or completed), which
	// the runner list would show only on its next read.
	Told bool
	// Gone: a delivery said the runner's job completed, so GitHub has removed the ephemeral
	// registration: deregistering it needs no request.
	Gone bool
	// Overrun: busy for the target's max_job_duration (ends.go).
	Overrun bool
	// Ghost: busy and alive while GitHub has said for the grace that its job completed or that
	// the runner is gone (ends.go).
	Ghost bool
	// KillDue: stopped for cause killGrace ago and still alive.
	KillDue bool
	Err     error // liveness could not be determined: decide waits
}

// step is the next thing to do for an attempt. Every step is idempotent, so a crash between a side
// effect and its journal record only makes the next daemon repeat it.
type step int

const (
	stepKeep       step = iota // alive: supervise (adopt, after a restart)
	stepWait                   // nothing can be decided now; look again next pass
	stepAttach                 // registered, and the shim runs: record its pid -> started
	stepMarkBusy               // GitHub says the runner took a job -> busy (touched again only by stepEnd)
	stepMarkExited             // the process ended -> exited (with the shim's status if any)
	stepDeregister             // delete the registration -> deregistered (busy answer: leave it)
	stepStop                   // deregistered but still running: ask the shim to stop it
	stepClean                  // remove the runtime directory -> cleaned
	stepDrop                   // planned: delete a registration found by name, then cleaned
	stepTimeout                // never came online: delete the registration -> failed (busy answer: busy)
	stepEnd                    // busy past max_job_duration, or a ghost: -> failed, then ask it to stop
	stepKill                   // stopped for cause and still alive after killGrace: kill it
)

// reasonNoExitStatus is the Reason of an exited attempt whose shim wrote no status (processMayRun reads it).
const reasonNoExitStatus = "runner process ended without writing an exit status"

var stepNames = [...]string{"keep", "wait", "attach", "mark-busy", "mark-exited", "deregister", "stop", "clean", "drop", "timeout", "end", "kill"}

func (s step) String() string { return stepNames[s] }

// decide is the keep / adopt / conclude rule for one attempt, used by startup recovery and by every
// pass alike (recovery is a normal code path). Pure; pinned by TestDecide.
func decide(a journal.Attempt, o observation) step {
	if o.Err != nil {
		return stepWait
	}
	ended := o.Exit.Exited || (o.HasProcess && !o.Alive)
	switch a.State {
	case journal.StatePlanned:
		// JIT may have been issued just before a crash: only GitHub's list by name can tell, and
		// only once the request can no longer be in flight (it may land seconds after the crash).
		if !o.ListKnown || (!o.Listed && !o.Settled) {
			return stepWait
		}
		return stepDrop
	case journal.StateRegistered:
		if o.HasProcess && o.Alive && !o.Exit.Exited {
			return stepAttach // crashed between Start and the journal write
		}
		return stepDeregister
	case journal.StateStarted:
		switch {
		case ended:
			return stepMarkExited
		case o.ListKnown && o.ListedBusy, o.Told:
			return stepMarkBusy
		case o.StartupExpired:
			return stepTimeout
		}
		return stepKeep
	case journal.StateBusy:
		switch {
		case ended:
			return stepMarkExited
		case o.Ghost, o.Overrun:
			return stepEnd
		}
		return stepKeep
	case journal.StateExited:
		return stepDeregister
	case journal.StateDeregistered:
		if o.HasProcess && o.Alive && !o.Exit.Exited {
			return stepStop
		}
		return stepClean
	case journal.StateFailed:
		switch {
		case endedForCause(a) && o.HasProcess && o.Alive && !o.Exit.Exited:
			// Stopped while GitHub still lists it busy: its DELETE would be refused until the
			// process is gone, so the process goes first.
			if o.KillDue {
				return stepKill
			}
			return stepStop
		case a.RunnerID != 0 || o.Listed:
			return stepDeregister
		case !o.ListKnown:
			return stepWait
		case o.HasProcess && o.Alive && !o.Exit.Exited:
			// Running with no registration at all: it cannot hold a job.
			return stepStop
		case a.RunnerID == 0 && !o.Settled:
			// The registration request failed without an answer; it may still land (as planned).
			return stepWait
		}
		return stepClean
	}
	return stepWait
}

// observe gathers the facts decide needs. Reading is cheap and local except for the list, which the
// pass fetched once for all attempts (before reading the journal, so it never shows a registration
// newer than the journal records).
func (l *loop) observe(a journal.Attempt, v *githubView) observation {
	var o observation
	lc := l.sup.deps.Launcher
	if a.ShimPID != 0 {
		o.Process, o.HasProcess = processOf(a), true
	} else if a.RuntimeDir != "" {
		p, ok, err := lc.ShimProcess(a.RuntimeDir)
		if err != nil {
			o.Err = fmt.Errorf("read shim state in %s: %w", a.RuntimeDir, err)
			return o
		}
		o.Process, o.HasProcess = p, ok
	}
	if o.HasProcess {
		alive, err := lc.Alive(o.Process)
		if err != nil {
			o.Err = fmt.Errorf("check runner process %d: %w", o.Process.PID, err)
			return o
		}
		o.Alive = alive
	}
	if a.RuntimeDir != "" {
		st, err := lc.ExitStatus(a.RuntimeDir)
		if err != nil {
			o.Err = fmt.Errorf("read exit status in %s: %w", a.RuntimeDir, err)
			return o
		}
		o.Exit = st
	}
	o.ListKnown = v.listed
	o.Settled = v.listed && l.sup.settled(a, v.at)
	if r, ok := v.byName[a.RunnerName]; ok {
		o.Listed, o.ListedID, o.ListedBusy = true, r.ID, r.Busy
	}
	o.JobID = v.jobOf[a.RunnerName]
	if id, ok := v.took[a.RunnerName]; ok {
		o.Told = true
		if o.JobID == 0 {
			o.JobID = id
		}
	}
	o.Gone = v.done[a.RunnerName] || l.finished[a.ID]
	// The jobs list naming the runner as a job's says it is busy as surely as the runner list.
	o.Told = o.Told || o.Gone || o.JobID != 0
	o.ListAt = v.at
	return o
}

// reconcile drives one attempt as far as it can go now and returns its latest journal record.
// Conclusion steps are not cut short by a stop, only by the shutdown bound (cleanupContext). A
// registration it deletes leaves v, so the steps after it know it is gone.
func (l *loop) reconcile(ctx context.Context, t config.Target, a journal.Attempt, v *githubView, recovering bool) (journal.Attempt, error) {
	cctx, cancel := l.sup.cleanupContext(ctx)
	defer cancel()
	for i := range 8 { // a full conclusion is at most six steps
		o := l.observe(a, v)
		o.StartupExpired = l.startupExpired(t, a, v)
		now := l.sup.clock.Now()
		o.Overrun = overrun(t, a, now)
		o.Ghost = l.ghostSince(t, a, o, now)
		o.KillDue = endedForCause(a) && now.Sub(a.UpdatedAt) >= killGrace
		s := decide(a, o)
		// A runner a light pass launched while the recovery pass read GitHub (loop.read) is
		// this daemon's own, not found running: no adoption event for it.
		if recovering && i == 0 && o.Alive && !l.launched[a.ID] && (s == stepKeep || s == stepMarkBusy || s == stepAttach) {
			l.emit(slog.LevelInfo, a.ID, EventAdopted, fmt.Sprintf("runner %s (pid %d) is alive in state %s: supervising it again", a.RunnerName, o.Process.PID, a.State))
		}
		next, done, err := l.execute(cctx, t, a, o, s)
		if err == nil && (s == stepDeregister || s == stepDrop || s == stepTimeout) && next.State != a.State {
			delete(v.byName, a.RunnerName)
		}
		if err != nil || done {
			return next, err
		}
		a = next
		if a.State.Terminal() {
			return a, nil
		}
	}
	return a, nil
}

// execute performs one step; done means stop for this pass (keep, wait, or waiting on GitHub/process).
func (l *loop) execute(ctx context.Context, t config.Target, a journal.Attempt, o observation, s step) (journal.Attempt, bool, error) {
	d := l.sup.deps
	switch s {
	case stepKeep, stepWait:
		return a, true, o.Err
	case stepAttach:
		n, err := l.transition(ctx, a, journal.StateStarted, func(x *journal.Attempt) {
			x.ShimPID, x.ShimStart = o.Process.PID, o.Process.StartTime
		}, fmt.Sprintf("runner %s found running (pid %d) though the journal had no pid: adopted", a.RunnerName, o.Process.PID))
		return n, err != nil, err
	case stepMarkBusy:
		n, err := l.markBusy(ctx, a, o.JobID, fmt.Sprintf("runner %s took a job; it will be left to finish", a.RunnerName))
		return n, true, err
	case stepMarkExited:
		if o.Exit.Exited && o.Exit.Code == 0 && (a.State == journal.StateStarted || a.State == journal.StateBusy) {
			// A just-in-time runner is ephemeral: it ends on its own with status 0 only after its
			// one job, and GitHub removes its registration when that job completes. So deregistering
			// it needs no DELETE even when no list or delivery has said so yet (a poll-mode runner
			// whose whole job fell between two passes). Were the registration still there, the next
			// list read (an exit always asks for one: watch) deletes it as an orphan. In memory only:
			// after a restart the DELETE is sent, and answered 404.
			l.finished[a.ID] = true
		}
		msg := fmt.Sprintf("runner %s ended", a.RunnerName)
		if o.Exit.OOMKilled {
			msg = fmt.Sprintf("%s: runner %s ended: its job went past memory_max and the kernel killed it inside the runner's cgroup; raise the target's memory_max if the job needs more", ReasonOutOfMemory, a.RunnerName)
		}
		n, err := l.transition(ctx, a, journal.StateExited, func(x *journal.Attempt) {
			if o.Exit.Exited {
				code := o.Exit.Code
				x.ExitCode = &code
			} else {
				x.Reason = reasonNoExitStatus
			}
			if o.Exit.OOMKilled {
				x.Reason = msg
			}
		}, msg)
		if err == nil && o.Exit.OOMKilled {
			l.runnerFailed(ReasonOutOfMemory)
		}
		l.sup.crash(CrashAfterExit, a.ID)
		return n, err != nil, err
	case stepDeregister, stepDrop:
		id := a.RunnerID
		switch {
		case o.Gone:
			// An ephemeral runner is removed by GitHub when its job ends: its exit 0 after the
			// job, or a delivery saying the job completed, means it is gone, even when the pass's
			// list (read before the end; in a fleet, the leader's, older still) names it. A
			// DELETE would only spend 5 points on a 404, and a request governor at its ceiling
			// holds it for seconds, the pass with it: a drain then overran its bound and left
			// the runner for recovery (TestDrainConcludesARunnerThatEndedAfterTheList). A
			// registration there after all is deleted as an orphan by the next list (watch asks
			// for one after an exit).
			id = 0
		case o.Listed:
			id = o.ListedID
		case o.ListKnown:
			id = 0 // a list that answered without it: gone
		}
		if id != 0 {
			err := d.Registrar.DeleteRunner(ctx, t, id)
			if errors.Is(err, ErrRunnerBusy) && endedForCause(a) {
				return l.deregisterEnded(ctx, a, err)
			}
			if errors.Is(err, ErrRunnerBusy) {
				// Alive and working somewhere: never conclude it; look again next pass.
				return a, true, nil
			}
			if err != nil {
				return a, true, fmt.Errorf("deregister runner %s (id %d) of target %s: %w", a.RunnerName, id, t.Name, err)
			}
		}
		if s == stepDrop {
			n, err := l.transition(ctx, a, journal.StateCleaned, nil, fmt.Sprintf("launch of %s never finished: dropped", a.RunnerName))
			return n, true, err
		}
		n, err := l.transition(ctx, a, journal.StateDeregistered, nil, fmt.Sprintf("runner %s deregistered", a.RunnerName))
		l.sup.crash(CrashAfterDeregister, a.ID)
		return n, err != nil, err
	case stepTimeout:
		return l.timeOut(ctx, t, a, o)
	case stepEnd:
		return l.endBusy(ctx, t, a, o)
	case stepKill:
		return l.kill(ctx, a, o)
	case stepStop:
		if err := d.Launcher.Stop(ctx, o.Process); err != nil {
			return a, true, fmt.Errorf("stop runner %s (pid %d): %w", a.RunnerName, o.Process.PID, err)
		}
		return a, true, nil // it ends on its own time; the next pass sees the exit
	case stepClean:
		if cl, ok := d.Launcher.(CgroupLauncher); ok && a.Cgroup != "" {
			if err := cl.RemoveCgroup(ctx, a.ID); err != nil {
				return a, true, fmt.Errorf("end the processes of %s in its cgroup %s: %w", a.RunnerName, a.Cgroup, err)
			}
			l.sup.crash(CrashAfterCgroupRemoved, a.ID)
		}
		if a.RuntimeDir != "" {
			if err := d.Launcher.RemoveRuntimeDir(ctx, a.RuntimeDir); err != nil {
				return a, true, fmt.Errorf("remove runtime directory %s of %s: %w; check permissions under the state dir", a.RuntimeDir, a.RunnerName, err)
			}
		}
		if a.WorkDir != "" {
			if err := d.Launcher.RemoveWorkDir(ctx, a.WorkDir); err != nil {
				return a, true, fmt.Errorf("remove work directory %s of %s: %w; check permissions under the target's work_dir", a.WorkDir, a.RunnerName, err)
			}
		}
		l.sup.crash(CrashMidClean, a.ID)
		n, err := l.transition(ctx, a, journal.StateCleaned, func(x *journal.Attempt) {
			if x.ExitCode == nil && o.Exit.Exited {
				code := o.Exit.Code
				x.ExitCode = &code
			}
		}, fmt.Sprintf("runner %s cleaned up", a.RunnerName))
		return n, true, err
	}
	return a, true, nil
}

// startupTimeout is t's startup_timeout; 0 (a target built in code, not loaded) is the default.
func startupTimeout(t config.Target) time.Duration {
	if d := t.StartupTimeout.D(); d > 0 {
		return d
	}
	return 5 * time.Minute
}

// startupExpired says whether started attempt a has gone startup_timeout without GitHub listing
// it online or busy: since its started record, or since the list last showed it online (a runner
// that lost its connection while idle). Only a list that answered can tell.
func (l *loop) startupExpired(t config.Target, a journal.Attempt, v *githubView) bool {
	if a.State != journal.StateStarted || !v.listed {
		return false
	}
	if r, ok := v.byName[a.RunnerName]; ok && (r.Online || r.Busy) {
		l.online[a.ID] = v.at
		return false
	}
	since := a.UpdatedAt
	if at, ok := l.online[a.ID]; ok && at.After(since) {
		since = at
	}
	return v.at.Sub(since) >= startupTimeout(t)
}

// timeOut gives up on a runner that never came online: deregister first (a busy answer means it
// took a job after all: it is left to finish), then record it failed; the next steps stop it and
// clean up. It keeps its capacity slot until then, but is no longer idle supply, so the pass
// launches its replacement.
func (l *loop) timeOut(ctx context.Context, t config.Target, a journal.Attempt, o observation) (journal.Attempt, bool, error) {
	if o.Listed {
		err := l.sup.deps.Registrar.DeleteRunner(ctx, t, o.ListedID)
		if errors.Is(err, ErrRunnerBusy) {
			n, err := l.markBusy(ctx, a, o.JobID, fmt.Sprintf("runner %s took a job as it was being given up on; it will be left to finish", a.RunnerName))
			return n, true, err
		}
		if err != nil {
			return a, true, fmt.Errorf("deregister runner %s (id %d) of target %s, which never came online: %w", a.RunnerName, o.ListedID, t.Name, err)
		}
	}
	since := "its start"
	if _, ok := l.online[a.ID]; ok {
		since = "it was last listed online"
	}
	reason := fmt.Sprintf("%s: GitHub has not listed runner %s online within startup_timeout (%s) of %s; check that the host reaches GitHub (proxy, firewall) and the runner's log in %s",
		ReasonRegistrationTimedOut, a.RunnerName, startupTimeout(t), since, a.RuntimeDir)
	n, err := l.transition(ctx, a, journal.StateFailed, func(x *journal.Attempt) { x.Reason = reason }, reason+"; deregistered, stopping it, a replacement is launched")
	if err != nil {
		return a, true, err
	}
	l.runnerFailed(ReasonRegistrationTimedOut)
	return n, false, nil
}
