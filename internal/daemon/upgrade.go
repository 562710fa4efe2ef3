package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/version"
	"github.com/runner-manager/runner-manager/selfupdate"
)

// UpgradeOptions enable self-update. The service runs a private copy of the binary (Private) so a
// package manager can replace Source at any time; the daemon notices, drains, swaps and exits
// with the upgrade-pending code for the service manager to start the new copy.
type UpgradeOptions struct {
	Source  string // the path a package manager replaces; "" disables self-update
	Private string // the file this daemon runs; default os.Executable()
	// Interval is how often Source is stat'ed; 0 = selfupdate.DefaultInterval (30 s). Tests shorten it.
	Interval time.Duration
}

func (u UpgradeOptions) private() (string, error) {
	if u.Private != "" {
		return u.Private, nil
	}
	return os.Executable()
}

// guard returns the crash-loop guard for this start, or nil when self-update is off.
func newGuard(o Options, stateDir string, log *slog.Logger) (*selfupdate.Guard, error) {
	if o.Upgrade.Source == "" {
		return nil, nil
	}
	private, err := o.Upgrade.private()
	if err != nil {
		return nil, fmt.Errorf("self-update: locate this binary: %w", err)
	}
	return &selfupdate.Guard{StateDir: stateDir, Binary: private, Version: version.Current(), Logger: log}, nil
}

// upgradeLoop watches the source binary and, on a verified new version, drains (no deadline of
// its own: every busy runner finishes its job, or is ended at its target's max_job_duration),
// swaps the private copy and returns ErrUpgradePending.
func (d *daemon) upgradeLoop(ctx context.Context) error {
	private, err := d.o.Upgrade.private()
	if err != nil {
		return err
	}
	rejected := ""
	if d.guard != nil {
		rejected = d.guard.Rejected()
	}
	o := &selfupdate.Orchestrator{
		Candidates: &selfupdate.Watcher{Source: d.o.Upgrade.Source, Running: version.Current(), Rejected: rejected,
			Interval: d.o.Upgrade.Interval, Logger: d.log},
		Drainer:   selfupdate.DrainFunc(d.upgradeDrain),
		Installer: &selfupdate.Installer{Target: private, Logger: d.log},
		Resume:    func() { d.sets.SetDraining(false); d.sup.Resume() },
		Logger:    d.log,
	}
	return o.Run(ctx)
}

// upgradeDrain reports a drain superseded by shutdown as a cancellation, so the orchestrator
// abandons the upgrade quietly instead of treating it as a failed drain.
func (d *daemon) upgradeDrain(ctx context.Context) error {
	d.sets.SetDraining(true) // scale sets: no new job is assigned to this host meanwhile
	err := d.sup.UpgradeDrain(ctx)
	if errors.Is(err, engine.ErrSuperseded) {
		return classed(context.Canceled, err)
	}
	return err
}
