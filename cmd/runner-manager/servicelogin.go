package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/internal/service"
)

// loginFlag is `service --user`: the service of the user running the command, started when they
// log in and running as them, instead of the system's, started at boot as root. On macOS that is
// a LaunchAgent (service.AgentPaths). The name is systemctl's own, so a systemd user unit, which
// does not exist yet, can take the same flag.
type loginFlag struct {
	on    bool
	paths service.Paths
}

var errAgentPerSlot = errors.New("--user: a LaunchAgent's daemon runs as you, not as root, so it cannot run runners as per-slot users: " +
	"remove daemon.runner_user = \"per-slot\" (runners then run as you), or install the boot-time LaunchDaemon with sudo runner-manager service install")

func (f *loginFlag) register(cmd *cobra.Command, sys service.System, root *string) {
	cmd.PersistentFlags().BoolVar(&f.on, "user", false, "the service of the user running the command, started at their login and running as them "+
		"(macOS: a LaunchAgent in ~/Library/LaunchAgents; no per-slot runner users), instead of the system's, started at boot as root")
	cmd.PersistentPreRunE = func(*cobra.Command, []string) error {
		if !f.on {
			return nil
		}
		if sys != service.Launchd {
			return withCode(exitUsage, fmt.Errorf("--user is the macOS LaunchAgent; %s has no user service here yet: install the system service (sudo runner-manager service install)", sys))
		}
		if *root == "" && os.Geteuid() == 0 {
			return withCode(exitUsage, errors.New("--user installs the service of the user running it, and that is root here: run it without sudo, as the user whose login starts the runners"))
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--user: %w: set HOME", err))
		}
		f.paths = service.AgentPaths(home, os.Getuid())
		return nil
	}
}

// userArg is the flag to repeat in a command the output suggests for m.
func userArg(m *service.Manager) string {
	if m.Paths.Agent() {
		return " --user"
	}
	return ""
}

// configOf is the config file the service's daemon reads: --config when given, else the mode's
// own (a LaunchAgent's is in the user's Library, not /etc/runner-manager).
func configOf(cmd *cobra.Command, m *service.Manager, flag string) string {
	if m.Paths.Agent() && !cmd.Flags().Changed("config") {
		return m.Paths.ConfigFile
	}
	return flag
}

// shellArg quotes s for a command line the output suggests, when it needs it: a LaunchAgent's
// paths are in "Application Support".
func shellArg(s string) string {
	if !strings.ContainsAny(s, " \t'\"$\\") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
