package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runner-manager/runner-manager/internal/daemon"
	"github.com/runner-manager/runner-manager/internal/logging"
	"github.com/runner-manager/runner-manager/internal/redact"
	"github.com/runner-manager/runner-manager/internal/service"
	"github.com/runner-manager/runner-manager/selfupdate"
)

func newDaemonCmd() *cobra.Command {
	var o daemon.Options
	var windowsService bool
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the autoscaler until stopped (SIGTERM/SIGINT drain, SIGHUP reloads the config)",
		Long: `Run the autoscaler in the foreground. The config file is watched and every valid change is
applied without a restart; an invalid file is rejected whole and the last good config keeps running.
SIGTERM or SIGINT drains for at most daemon.shutdown_drain_timeout, never stopping a busy runner;
runners still alive are adopted by the next start. See docs/exit-codes.md for exit codes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if service.UnderSCM(windowsService) {
				return daemonUnderSCM(cmd, o)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			reload := make(chan struct{}, 1)
			go forwardSignals(ctx, hup, reload)

			o.Stderr = cmd.ErrOrStderr()
			o.IsTTY = term.IsTerminal(int(os.Stderr.Fd()))
			o.Reload = reload
			return daemonExit(daemon.Run(ctx, daemonOptions(cmd, o)))
		},
	}
	cmd.Flags().StringVar(&o.ConfigPath, "config", defaultConfigPath, "config file (TOML or YAML)")
	cmd.Flags().StringVar(&o.Upgrade.Source, "upgrade-source", "", "binary path a package manager replaces; enables self-update (service install sets it)")
	cmd.Flags().DurationVar(&o.Upgrade.Interval, "upgrade-poll-interval", 0, "how often the upgrade source is checked (default 30s)")
	_ = cmd.Flags().MarkHidden("upgrade-poll-interval") // for tests: operators have no reason to change it
	cmd.Flags().BoolVar(&windowsService, strings.TrimPrefix(service.WindowsServiceFlag, "--"), false, "run as the Windows service (service install registers it)")
	_ = cmd.Flags().MarkHidden(strings.TrimPrefix(service.WindowsServiceFlag, "--"))
	return cmd
}

// daemonOptions completes o as every daemon start does, under a terminal, systemd, launchd or the
// Windows SCM alike.
func daemonOptions(cmd *cobra.Command, o daemon.Options) daemon.Options {
	if p, ok := gcPercent(os.Getenv); ok {
		debug.SetGCPercent(p)
	}
	o.Redactor = redact.FromContext(cmd.Context()) // the one stderr goes through: the daemon teaches it
	o.Crash = crashHookFromEnv()
	o.CallTimeout = callTimeoutFromEnv()
	return o
}

// daemonUnderSCM runs the daemon as the Windows service (service install registered it): the SCM's
// Stop and Shutdown are SIGTERM's drain, its ParamChange is SIGHUP's reload (service.Controlled).
// There is no console: every line, the exit's reason included, goes to the service's log file,
// %ProgramData%\runner-manager\logs\runner-manager.log, size-bounded (logging.RotatingFile).
func daemonUnderSCM(cmd *cobra.Command, o daemon.Options) error {
	path := service.DefaultPaths(service.Windows).LogFile
	logFile, err := logging.OpenRotating(path, logging.RotateMaxBytes, logging.RotateKeep)
	if err != nil {
		return withCode(exitLocalState, err) // the SCM records exit code 5
	}
	defer logFile.Close()
	o = daemonOptions(cmd, o)
	o.Stderr = o.Redactor.Writer(logFile)
	var result error
	err = service.RunWindowsService(service.WindowsServiceName, func(ctx context.Context, reload <-chan struct{}) error {
		o.Reload = reload
		if result = daemonExit(daemon.Run(ctx, o)); result != nil {
			fmt.Fprintln(o.Stderr, "runner-manager:", result)
		}
		return result
	}, exitCode)
	if err != nil {
		fmt.Fprintln(o.Stderr, "runner-manager: running as a Windows service:", err)
		return withCode(exitFailure, err)
	}
	return result
}

// exitCode is the process exit code main gives err (withCode's, else 1; 0 for nil).
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee.code
	}
	return exitFailure
}

// daemonGCPercent is the daemon's GOGC unless its environment sets one. Go counts goroutine stacks
// in its collection goal (live heap + (live heap + stacks) x GOGC/100); at 1,000 idle targets the
// live heap is about 9 MiB and the loops' stacks about 4-5 MiB (10-14 MiB before a loop ran its
// passes on a goroutine of their own, engine's shallow), and at the default 100 the heap grew to
// several times its live size between collections, and RSS with it. At 25 the goal is about 1.4
// times the live heap, for a collection every half minute or so when idle (docs/benchmarks.md,
// figure 13; issue 28). 10 saved about 3 MiB more of RSS there but cost about a third more idle
// CPU (0.75 % of a core against 0.56 %) and a collection per 1.4 MiB allocated when busy.
const daemonGCPercent = 25

// gcPercent is the GOGC the daemon sets, and false when the operator's GOGC (which the runtime
// has already applied) stands.
func gcPercent(getenv func(string) string) (int, bool) {
	if getenv("GOGC") != "" {
		return 0, false
	}
	return daemonGCPercent, true
}

func forwardSignals(ctx context.Context, in <-chan os.Signal, out chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-in:
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}
}

// daemonExits are the daemon's failure classes and their documented exit codes, first match wins.
var daemonExits = []struct {
	class error
	code  int
}{
	{selfupdate.ErrUpgradePending, exitUpgradePending},
	{daemon.ErrConfigInvalid, exitFailure},
	{daemon.ErrConfigUnreadable, exitUsage},
	{daemon.ErrConflict, exitConflict},
	{daemon.ErrNotAuthenticated, exitNotAuthed},
	{daemon.ErrLocalState, exitLocalState},
}

// daemonExit maps the daemon's failure classes to the documented exit codes (daemonExits); any
// other error exits 1.
func daemonExit(err error) error {
	if err == nil {
		return nil
	}
	for _, e := range daemonExits {
		if errors.Is(err, e.class) {
			return withCode(e.code, err)
		}
	}
	return withCode(exitFailure, err)
}
