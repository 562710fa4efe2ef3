package selfupdate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// ErrUpgradePending means a verified upgrade is installed and this process must exit so the service
// manager starts the new binary; the CLI maps it to exit code 75 (exitUpgradePending).
var ErrUpgradePending = errors.New("a verified upgrade is installed; exiting so the service manager starts the new binary")

// Candidates yields confirmed upgrades; *Watcher is the real one.
type Candidates interface {
	Next(ctx context.Context) (Candidate, error)
}

// Drainer is the engine's upgrade drain: it returns nil once the journal counts no live runner (no
// deadline; busy runners finish their jobs). When a shutdown supersedes it, it must return an error
// matching context.Canceled (wrap engine.ErrSuperseded so), which abandons the upgrade quietly; any
// other error is logged as a failed drain.
type Drainer interface {
	UpgradeDrain(ctx context.Context) error
}

// DrainFunc adapts a function to Drainer.
type DrainFunc func(ctx context.Context) error

func (f DrainFunc) UpgradeDrain(ctx context.Context) error { return f(ctx) }

// Swapper installs a candidate; *Installer is the real one.
type Swapper interface {
	Install(ctx context.Context, c Candidate) error
}

// Orchestrator runs the whole upgrade: candidate -> drain -> install -> ErrUpgradePending.
type Orchestrator struct {
	Candidates Candidates
	Drainer    Drainer
	Installer  Swapper
	// Resume, if set, is called after a drain whose install failed, so the engine launches runners
	// again; the daemon keeps running its current binary.
	Resume func()
	Logger *slog.Logger // nil = slog.Default()
}

// Run waits for candidates and upgrades to the first one that installs. It returns
// ErrUpgradePending after a successful install, or nil once ctx ends (shutdown): a shutdown during
// the wait or the drain swaps nothing. A failed install is logged and the watch goes on.
func (o *Orchestrator) Run(ctx context.Context) error {
	log := loggerOr(o.Logger)
	for {
		c, err := o.Candidates.Next(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("watching for upgrades: %w", err)
		}
		log.Info("upgrade: draining; busy runners finish their jobs first (each at most its target's max_job_duration)", "version", c.Version)
		if err := o.Drainer.UpgradeDrain(ctx); err != nil || ctx.Err() != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				log.Info("upgrade abandoned: shutting down during the drain; nothing was swapped", "version", c.Version)
				return nil
			}
			log.Error("upgrade drain failed; staying on the running version", "version", c.Version, "err", err)
			o.resume()
			continue
		}
		// Past the drain the swap is short and must not be cut in half by a late shutdown.
		if err := o.Installer.Install(context.WithoutCancel(ctx), c); err != nil {
			log.Error("upgrade failed; staying on the running version", "version", c.Version, "err", err)
			o.resume()
			continue
		}
		return ErrUpgradePending
	}
}

func (o *Orchestrator) resume() {
	if o.Resume != nil {
		o.Resume()
	}
}
