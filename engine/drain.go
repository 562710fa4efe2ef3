package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

const (
	drainNone int32 = iota
	drainUpgrade
	drainShutdown
)

// ErrSuperseded is returned by UpgradeDrain when a Shutdown arrives while it waits.
var ErrSuperseded = errors.New("upgrade drain superseded by shutdown")

func (s *Supervisor) draining() bool { return s.drain.Load() != drainNone }

func (s *Supervisor) drainMode() string {
	switch s.drain.Load() {
	case drainUpgrade:
		return "upgrade"
	case drainShutdown:
		return "shutdown"
	}
	return ""
}

func (s *Supervisor) pokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.loops {
		l.poke()
	}
}

// ShutdownReport says what a shutdown left running for the next daemon's recovery.
type ShutdownReport struct {
	Left     int  // non-terminal attempts left in the journal
	LeftBusy int  // of which busy: running a job
	TimedOut bool // the drain bound ended the drain, not an empty host
}

// Shutdown drains for at most the config's shutdown_drain_timeout (or ctx, if sooner): every loop
// starts nothing new, deregisters and stops idle runners, and concludes exited ones; busy runners
// are never touched. A drain that empties the host ends with a last sweep of this host's
// registrations, within the same bound. At the bound every call still running, cleanup included,
// is cancelled, so Shutdown returns right after it. What is left is in the report.
func (s *Supervisor) Shutdown(ctx context.Context) (ShutdownReport, error) {
	s.mu.Lock()
	if s.drain.Swap(drainShutdown) != drainShutdown {
		close(s.shutdownCh)
	}
	s.mu.Unlock()
	bound := time.Duration(0)
	if cfg := s.config(); cfg != nil {
		bound = cfg.Daemon.ShutdownDrainTimeout.D()
	}
	s.events.emit(slog.LevelInfo, "", "", EventDrain, fmt.Sprintf("shutdown: draining for at most %s; busy runners are left running", bound))
	s.pokeAll()

	var rep ShutdownReport
	bctx, stop := s.clockContext(ctx, bound)
	defer stop()
wait:
	for {
		s.mu.Lock()
		n, changed := len(s.loops), s.changed
		s.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-changed:
		case <-bctx.Done():
			rep.TimedOut = true
			break wait
		}
	}
	if rep.TimedOut {
		s.hardCancel()
	}
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.stopped = true
	s.mu.Unlock()
	s.wg.Wait()
	if !rep.TimedOut && s.deps.Registrar != nil {
		s.sweep(bctx, s.sweepTargets())
	}

	if s.deps.Journal != nil {
		live, err := s.deps.Journal.Live(context.WithoutCancel(ctx))
		if err != nil {
			return rep, fmt.Errorf("count runners left for recovery: %w", err)
		}
		rep.Left = len(live)
		for _, a := range live {
			if a.State == journal.StateBusy {
				rep.LeftBusy++
			}
		}
	}
	s.events.emit(slog.LevelInfo, "", "", EventDrain, fmt.Sprintf("shutdown: %d runner attempts left for startup recovery (%d busy)", rep.Left, rep.LeftBusy))
	return rep, nil
}

// sweepTargets is one target per identity that this run sent a registration request to that was
// given up or that no journal record accounts for (doubt), taken once every loop has stopped. A
// target this run registered nothing at, or whose every registration the journal names, needs no
// read: the journal's records are concluded by the loops and the next start's recovery, so a stop
// reads GitHub by what this run registered, never once per target (TestStopReadsOnlyDoubtedTargets).
func (s *Supervisor) sweepTargets() []config.Target {
	s.unsureMu.Lock()
	out := make([]config.Target, 0, len(s.unsure))
	for _, t := range s.unsure {
		out = append(out, t)
	}
	s.unsureMu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// sweep deletes, once every loop has stopped, the registrations of this host that no live attempt
// accounts for: a registration request that GitHub answered only after its attempt was concluded
// (given up, then landed) would otherwise stay registered after a clean exit. ctx carries the
// shutdown bound.
func (s *Supervisor) sweep(ctx context.Context, targets []config.Target) {
	for _, t := range targets {
		if ctx.Err() != nil {
			return
		}
		regs, err := s.deps.Registrar.Runners(ctx, t)
		if err == nil {
			var live []journal.Attempt
			if live, err = s.deps.Journal.Live(ctx); err == nil {
				err = s.deleteOrphans(ctx, t, regs, live)
			}
		}
		if err != nil && ctx.Err() == nil {
			s.events.emit(slog.LevelWarn, t.Name, "", EventDrain, fmt.Sprintf("shutdown: last sweep of this host's registrations failed (the next start retries it): %v", err))
		}
	}
}

// UpgradeDrain puts every loop into drain (start nothing, reap idle runners, let busy ones finish)
// and waits, with no deadline of its own (each busy runner is bounded by its target's
// max_job_duration, ends.go), until no launch is under way and the journal holds no runner whose
// process may still run, except idle runners whose deregistration failed: they are left to the next
// daemon's recovery, as a stop leaves them. It counts from the journal only and waits for jobs, not
// for GitHub, so it completes while GitHub is unreachable or the credential is revoked; a journal
// that cannot be read is "unknown", and the wait goes on. A Shutdown arriving meanwhile supersedes
// it (ErrSuperseded). Cancelling ctx calls the upgrade off and the loops resume. On success the
// loops stay drained and the caller hands over to the new binary.
func (s *Supervisor) UpgradeDrain(ctx context.Context) error {
	if !s.drain.CompareAndSwap(drainNone, drainUpgrade) && s.drain.Load() == drainShutdown {
		return ErrSuperseded
	}
	s.events.emit(slog.LevelInfo, "", "", EventDrain, "upgrade: waiting for every running job to finish, at most until its target's max_job_duration ends it")
	s.pokeAll()
	var readErr string
	for {
		n, err := s.mayRun(ctx)
		switch {
		case err != nil && err.Error() != readErr:
			readErr = err.Error()
			s.events.emit(slog.LevelWarn, "", "", EventDrain, fmt.Sprintf("upgrade: cannot read the journal, so cannot tell what still runs; still waiting: %v; check the state dir", err))
		case err == nil && n == 0:
			s.events.emit(slog.LevelInfo, "", "", EventDrain, "upgrade: no runner left running; ready to hand over")
			return nil
		case err == nil:
			readErr = ""
		}
		timer, stop := s.clock.Timer(s.opts.DrainPoll)
		select {
		case <-s.shutdownCh:
			stop()
			return ErrSuperseded
		case <-ctx.Done():
			stop()
			// The upgrade was called off: loops resume launching unless a shutdown began meanwhile.
			s.resume(slog.LevelInfo, "upgrade drain cancelled: resuming normal operation")
			return ctx.Err()
		case <-timer:
		}
	}
}

// mayRun counts what an upgrade waits for: launches under way, and attempts whose process may run
// and that the drain has not left for recovery.
func (s *Supervisor) mayRun(ctx context.Context) (int, error) {
	n := int(s.inflight.Load())
	live, err := s.deps.Journal.Live(ctx)
	if err != nil {
		return 0, err
	}
	for _, a := range live {
		if processMayRun(a) && !(a.State == journal.StateStarted && s.leftForRecovery(a.ID)) {
			n++
		}
	}
	return n, nil
}

// Resume ends an upgrade drain whose handover failed (the new binary could not be installed), so
// the loops launch again on the current binary. A shutdown in progress is never undone.
func (s *Supervisor) Resume() {
	s.resume(slog.LevelWarn, "upgrade abandoned: resuming normal operation on the current binary")
}

// resume leaves an upgrade drain. Loops that drained empty have retired meanwhile, so every enabled
// target without a loop gets a new one; the others are woken to launch again.
func (s *Supervisor) resume(level slog.Level, msg string) {
	if !s.drain.CompareAndSwap(drainUpgrade, drainNone) {
		return
	}
	s.events.emit(level, "", "", EventDrain, msg)
	s.leftMu.Lock()
	clear(s.left) // running normally again: idle runners are reaped, not left
	s.leftMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runCtx != nil && s.cfg.Load() != nil {
		s.syncLoopsLocked(wakeAll)
	}
}

// processMayRun reports whether an attempt's runner process may be alive, by the journal alone:
// started or busy, or deregistered after a reap whose exit was not seen yet. Attempts that only owe
// GitHub cleanup (exited, failed without a process) do not hold an upgrade back.
func processMayRun(a journal.Attempt) bool {
	switch a.State {
	case journal.StateStarted, journal.StateBusy:
		return true
	case journal.StateFailed:
		// Stopped for cause (max_job_duration, ghost): alive until the pass that sees its exit
		// deregisters it.
		return endedForCause(a) && a.ShimPID != 0
	case journal.StateDeregistered:
		// Exited runners carry an exit code or the reason it is missing; a reaped one carries neither.
		return a.ShimPID != 0 && a.ExitCode == nil && a.Reason != reasonNoExitStatus
	}
	return false
}
