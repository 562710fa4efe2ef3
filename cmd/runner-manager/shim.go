package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/internal/runner"
)

// newShimCmd is the hidden `runner-manager shim`: the daemon starts it for every runner
// (internal/runner.Launcher.Start) and it supervises that runner in its own session, so the
// runner survives daemon restarts and upgrades. Operators see it in `ps`, never type it.
func newShimCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "shim",
		Short:  "Supervise one runner process (started by the daemon, not by hand)",
		Hidden: true,
		// The shim parses its own flags: its argument list is a protocol with the launcher.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := runner.RunShim(cmd.Context(), args, os.Environ()); code != 0 {
				return withCode(code, nil)
			}
			return nil
		},
	}
}
