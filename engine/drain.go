package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

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
// are never touched. Then supervision stops and Run returns; what is left is in the report.
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
	timeout, stop := s.clock.Timer(bound)
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
		case <-timeout:
			rep.TimedOut = true
			break wait
		case <-ctx.Done():
			rep.TimedOut = true
			break wait
		}
	}
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.stopped = true
	s.mu.Unlock()
	s.wg.Wait()

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

// UpgradeDrain puts every loop into drain (start nothing, reap idle runners, let busy ones finish)
// and waits, with no deadline, until the journal holds no runner whose process may still run. It
// counts from the journal only, so it completes while GitHub is unreachable. A Shutdown arriving
// meanwhile supersedes it (ErrSuperseded). Cancelling ctx calls the upgrade off and the loops resume.
// On success the loops stay drained and the caller hands over to the new binary.
func (s *Supervisor) UpgradeDrain(ctx context.Context) error {
	if !s.drain.CompareAndSwap(drainNone, drainUpgrade) && s.drain.Load() == drainShutdown {
		return ErrSuperseded
	}
	s.events.emit(slog.LevelInfo, "", "", EventDrain, "upgrade: waiting for every running job to finish, however long")
	s.pokeAll()
	for {
		live, err := s.deps.Journal.Live(ctx)
		if err != nil {
			return fmt.Errorf("upgrade drain: read the journal: %w", err)
		}
		n := 0
		for _, a := range live {
			if processMayRun(a) {
				n++
			}
		}
		if n == 0 {
			s.events.emit(slog.LevelInfo, "", "", EventDrain, "upgrade: no runner left running; ready to hand over")
			return nil
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
	case journal.StateDeregistered:
		// Exited runners carry an exit code or the reason it is missing; a reaped one carries neither.
		return a.ShimPID != 0 && a.ExitCode == nil && a.Reason == ""
	}
	return false
}
