package selfupdate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
)

// GuardStateFile is the guard's record in the state directory. `service install` removes it, which
// also forgets a rejected version.
const GuardStateFile = "selfupdate-guard.json"

// Guard defaults: a start that stays up for DefaultWindow is healthy; DefaultLimit unhealthy starts
// in a row of a version that was never healthy roll it back.
const (
	DefaultWindow = 30 * time.Second
	DefaultLimit  = 3
)

// GuardState is what the guard records; `service status` shows it.
type GuardState struct {
	Version      string    `json:"version"`       // the version the counters are about
	Proven       bool      `json:"proven"`        // this version once stayed up for the window
	Running      bool      `json:"running"`       // a start was recorded and not yet marked healthy or stopped
	StartedAt    time.Time `json:"started_at"`    // of the last start
	FailedStarts int       `json:"failed_starts"` // starts in a row that ended inside the window
	Rejected     string    `json:"rejected,omitempty"`
	RollbackWhy  string    `json:"rollback_reason,omitempty"`
	RolledBackAt time.Time `json:"rolled_back_at,omitzero"`
}

// Guard rolls a new binary that keeps dying back to the previous one (Binary + OldSuffix).
// A start that ended inside the window is recognised at the next start: its record was never marked
// healthy or stopped. Only a version that was never healthy is rolled back, so a long-proven binary
// failing for another reason (full disk) is not swapped for a stale one.
type Guard struct {
	StateDir string        // the daemon's state directory
	Binary   string        // the private copy the service runs
	Version  string        // the running version: internal/version.Version
	Window   time.Duration // 0 = DefaultWindow
	Limit    int           // 0 = DefaultLimit
	Clock    Clock         // nil = RealClock
	Run      RunFunc       // nil = ExecRun; probes .old before trusting it
	Timeout  time.Duration // probe timeout; 0 = DefaultProbeTimeout
	Logger   *slog.Logger  // nil = slog.Default()
	swapper
}

// OnStart records this start. If the previous Limit starts of this never-healthy version all ended
// inside the window and Binary.old runs, it moves Binary.old back over Binary, records the version as
// rejected and returns rolledBack=true: the daemon must then exit with the "upgrade pending" code so
// the service manager starts the restored binary. Call it first thing in the daemon, before loading
// the config, so any early death counts. An error means the record could not be kept; the daemon
// should log it and go on.
func (g *Guard) OnStart(ctx context.Context) (rolledBack bool, err error) {
	log := g.logger()
	// A binary an earlier rollback moved aside on Windows was still running then; it is not now.
	if err := g.removeIfExists(g.Binary + RejectedSuffix); err != nil {
		log.Warn("cannot remove the binary a rollback set aside; the next install retries", "file", g.Binary+RejectedSuffix, "err", err)
	}
	st := g.load()
	switch {
	case st.Version != g.Version:
		st = g.fresh(st)
	case st.Running:
		st.FailedStarts++
		log.Warn("the previous start ended before it was healthy", "version", g.Version,
			"failed_starts_in_a_row", st.FailedStarts, "window", g.window().String())
	}
	if st.FailedStarts >= g.limit() && !st.Proven {
		why := fmt.Sprintf("version %s exited within %s of starting %d times in a row", g.Version, g.window(), st.FailedStarts)
		ok, err := g.rollback(ctx, why)
		if err != nil {
			log.Error("crash loop detected but rollback is not possible", "why", why, "err", err)
		} else if ok {
			st = GuardState{Version: g.Version, Rejected: g.Version, RollbackWhy: why, RolledBackAt: g.clock().Now()}
			return true, g.save(st)
		}
	}
	st.Running, st.StartedAt = true, g.clock().Now()
	return false, g.save(st)
}

func (g *Guard) rollback(ctx context.Context, why string) (bool, error) {
	old := g.Binary + OldSuffix
	if _, err := os.Stat(old); errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("no previous binary %s to roll back to", old)
	}
	prev, err := ProbeVersion(ctx, g.Run, old, g.Timeout)
	if err != nil {
		return false, fmt.Errorf("the previous binary does not run either: %w", err)
	}
	if err := g.restore(old); err != nil {
		return false, err
	}
	if err := atomicfile.SyncDir(filepath.Dir(g.Binary)); err != nil {
		return false, fmt.Errorf("syncing %s: %w", filepath.Dir(g.Binary), err)
	}
	g.logger().Error("rolled back a crash-looping upgrade; the service manager will start the previous version",
		"why", why, "rejected", g.Version, "restored", prev,
		"hint", "the rejected version is not retried; install a fixed version at the source path")
	return true, nil
}

// restore moves old back over Binary. On Windows Binary is this running process's file, which
// cannot be replaced: it is renamed to Binary.rejected first (removed at the next start), and
// renamed back if old cannot take its place. TestGuardRollsBackOnWindows.
func (g *Guard) restore(old string) error {
	ops := g.ops()
	if g.renameAside() {
		aside := g.Binary + RejectedSuffix
		if err := ops.Rename(g.Binary, aside); err != nil {
			return fmt.Errorf("moving the running %s aside to %s: %w", g.Binary, aside, err)
		}
		if err := ops.Rename(old, g.Binary); err != nil {
			if rerr := ops.Rename(aside, g.Binary); rerr != nil {
				return fmt.Errorf("moving %s back to %s: %w; AND putting the running binary back failed: %v: rename %s to %s by hand", old, g.Binary, err, rerr, aside, g.Binary)
			}
			return fmt.Errorf("moving %s back to %s: %w", old, g.Binary, err)
		}
		return nil
	}
	if err := ops.Rename(old, g.Binary); err != nil {
		return fmt.Errorf("moving %s back to %s: %w", old, g.Binary, err)
	}
	return nil
}

// AwaitHealthy waits the window on the clock and then marks this start healthy. Run it in a
// goroutine the daemon owns; it returns ctx's error if the daemon stops first.
func (g *Guard) AwaitHealthy(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-g.clock().After(g.window()):
		return g.MarkHealthy()
	}
}

// MarkHealthy records that this start stayed up: the run of failed starts is over and this version
// is proven, so it is never rolled back.
func (g *Guard) MarkHealthy() error {
	return g.end(true)
}

// MarkStopped records a deliberate exit (shutdown, upgrade handover) so it does not count as a
// crash, without proving the version.
func (g *Guard) MarkStopped() error {
	return g.end(false)
}

func (g *Guard) end(healthy bool) error {
	st := g.load()
	if st.Version != g.Version {
		st = g.fresh(st)
	}
	st.Running, st.FailedStarts = false, 0
	st.Proven = st.Proven || healthy
	return g.save(st)
}

// fresh starts the counters for this version, keeping what an earlier rollback rejected.
func (g *Guard) fresh(st GuardState) GuardState {
	return GuardState{Version: g.Version, Rejected: st.Rejected, RollbackWhy: st.RollbackWhy, RolledBackAt: st.RolledBackAt}
}

// Rejected is the version the guard rolled back, "" if none; give it to Watcher.Rejected.
func (g *Guard) Rejected() string { return g.load().Rejected }

// ReadGuardState reads the guard's record from stateDir; a missing file is a zero state.
func ReadGuardState(stateDir string) (GuardState, error) {
	var st GuardState
	b, err := os.ReadFile(filepath.Join(stateDir, GuardStateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return GuardState{}, fmt.Errorf("%s: %w", filepath.Join(stateDir, GuardStateFile), err)
	}
	return st, nil
}

// load never fails: a damaged record must not stop the daemon, it only costs the crash count.
func (g *Guard) load() GuardState {
	st, err := ReadGuardState(g.StateDir)
	if err != nil {
		g.logger().Warn("crash-loop guard record unreadable; starting it afresh", "err", err)
		return GuardState{}
	}
	return st
}

func (g *Guard) save(st GuardState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(g.StateDir, GuardStateFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("crash-loop guard: %w", err)
	}
	return nil
}

func (g *Guard) window() time.Duration {
	if g.Window > 0 {
		return g.Window
	}
	return DefaultWindow
}

func (g *Guard) limit() int {
	if g.Limit > 0 {
		return g.Limit
	}
	return DefaultLimit
}

func (g *Guard) clock() Clock         { return clockOr(g.Clock) }
func (g *Guard) logger() *slog.Logger { return loggerOr(g.Logger) }
