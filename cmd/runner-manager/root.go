package main

import (
	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/internal/version"
)

// defaultConfigPath is where operators keep the config; every subcommand's --config defaults to it.
const defaultConfigPath = "/etc/runner-manager/config.toml"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "runner-manager",
		Short:         "Autoscale GitHub Actions just-in-time runners on this host",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate(version.String() + "\n")
	// Subcommands: one constructor per file, added here one per line.
	root.AddCommand(
		newServiceCmd(),
		newValidateCmd(),
		newStatusCmd(), newRunnersCmd(),
		newConfigCmd(),
		newAuthCmd(),
		newShimCmd(),
		newDaemonCmd(),
	)
	return root
}
