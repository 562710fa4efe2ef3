package selfupdate_test

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/runner-manager/runner-manager/internal/version"
	"github.com/runner-manager/runner-manager/selfupdate"
)

// How the daemon wires self-update when the service manager started it from its private copy
// (the unit sets RM_SOURCE_BINARY). drain is engine.Supervisor.UpgradeDrain with ErrSuperseded
// wrapped as context.Canceled; resume puts the engine back to launching after a failed install.
func Example_daemonWiring() {
	var (
		ctx      = context.Background() // the daemon's run context: cancelled on shutdown
		stateDir = "/var/lib/runner-manager"
		log      = slog.Default()
		drain    = func(context.Context) error { return nil }
		resume   = func() {}
	)
	source := os.Getenv("RM_SOURCE_BINARY")
	self, err := os.Executable()
	if source == "" || err != nil {
		return // not run as the service: no private copy to swap
	}
	guard := &selfupdate.Guard{StateDir: stateDir, Binary: self, Version: version.Version, Logger: log}
	if rolledBack, err := guard.OnStart(ctx); err != nil {
		log.Warn("crash-loop guard unavailable", "err", err)
	} else if rolledBack {
		os.Exit(75) // exitUpgradePending: the service manager starts the restored binary
	}
	go func() { _ = guard.AwaitHealthy(ctx) }() // owned by the daemon's run group in real code
	o := &selfupdate.Orchestrator{
		Candidates: &selfupdate.Watcher{Source: source, Running: version.Version, Rejected: guard.Rejected(), Logger: log},
		Drainer:    selfupdate.DrainFunc(drain),
		Installer:  &selfupdate.Installer{Target: self, Logger: log},
		Resume:     resume,
		Logger:     log,
	}
	if err := o.Run(ctx); errors.Is(err, selfupdate.ErrUpgradePending) {
		_ = guard.MarkStopped()
		os.Exit(75) // in the CLI: return withCode(exitUpgradePending, nil)
	}
}
