package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/service"
	"github.com/runner-manager/runner-manager/internal/status"
	"github.com/runner-manager/runner-manager/selfupdate"
)

// newServiceCmd is `runner-manager service install|uninstall|status|start|stop`.
func newServiceCmd() *cobra.Command { return serviceCmd(time.Now) }

func serviceCmd(now func() time.Time) *cobra.Command {
	var root string
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Install, control and inspect runner-manager as a system service (systemd or launchd)",
		Long: `The service runs a private copy of this binary from the state directory, so a package manager
can replace the binary you installed from at any time. The daemon notices the new version, waits for
every running job to finish, swaps the private copy and restarts through the service manager; a new
version that keeps crashing is rolled back. See docs/upgrades.md.`,
	}
	cmd.PersistentFlags().StringVar(&root, "root", "", "operate on this directory tree instead of / (image building, tests); systemctl/launchctl are not run")
	mgr := func(cmd *cobra.Command) *service.Manager {
		sys := service.Detect()
		p := service.DefaultPaths(sys)
		m := &service.Manager{System: sys, Paths: p, Clock: now, Logger: slog.New(slog.DiscardHandler)}
		if root != "" {
			m.Paths.Root = root
			m.Run = skipServiceManager(cmd)
		}
		return m
	}
	cmd.AddCommand(
		serviceInstallCmd(mgr),
		serviceUnitCmd(mgr),
		serviceSimpleCmd(mgr, "uninstall", "Stop and remove the service (runners, config and state are kept)",
			func(ctx context.Context, m *service.Manager) error { return m.Uninstall(ctx) }),
		serviceSimpleCmd(mgr, "start", "Start the installed service",
			func(ctx context.Context, m *service.Manager) error { return m.Start(ctx) }),
		serviceSimpleCmd(mgr, "stop", "Stop the daemon (drains at most 60 s; runners keep running their jobs)",
			func(ctx context.Context, m *service.Manager) error { return m.Stop(ctx) }),
		serviceStatusCmd(mgr, now),
	)
	return cmd
}

func serviceInstallCmd(mgr func(*cobra.Command) *service.Manager) *cobra.Command {
	var source, config string
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install the service from this binary and enable it (start it with service start)",
		Long: `install copies this binary to a private path, writes the systemd unit (or launchd plist) that
runs it and enables it. The unit's stop timeout is the config's daemon.shutdown_drain_timeout
+ 30 s (the default 60 s when the config does not exist yet): reinstall after raising it.
service unit prints the same unit without installing anything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, source, err := serviceFor(cmd, mgr, config, source)
			if err != nil {
				return err
			}
			rec, err := m.Install(cmd.Context(), source)
			if err != nil {
				return withCode(exitFailure, err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "installed runner-manager %s as %s\n", rec.Version, rec.Unit)
			fmt.Fprintf(out, "  runs:    %s (private copy)\n  watches: %s (replace it to upgrade)\n  config:  %s\n", rec.Binary, rec.Source, rec.Config)
			if _, err := os.Stat(filepath.Join(m.Paths.Root, rec.Config)); err != nil {
				fmt.Fprintf(out, "note: %s does not exist yet; write it (runner-manager config init --config %s) before starting\n", rec.Config, rec.Config)
			}
			fmt.Fprintln(out, "start it with: runner-manager service start")
			return nil
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the binary to install and to watch for upgrades (default: the one you ran)")
	cmd.Flags().StringVar(&config, "config", defaultConfigPath, "config file the service's daemon reads")
	return cmd
}

func serviceUnitCmd(mgr func(*cobra.Command) *service.Manager) *cobra.Command {
	var source, config string
	cmd := &cobra.Command{
		Use:   "unit",
		Short: "Print the systemd unit (or launchd plist) service install would write",
		Long: `unit prints what service install writes, for review, configuration management or image
builds; it installs nothing. The stop timeout follows the config's daemon.shutdown_drain_timeout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, source, err := serviceFor(cmd, mgr, config, source)
			if err != nil {
				return err
			}
			unit, err := m.Render(source)
			if err != nil {
				return withCode(exitUsage, err)
			}
			_, err = io.WriteString(cmd.OutOrStdout(), unit)
			return err
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the binary the service watches for upgrades (default: the one you ran)")
	cmd.Flags().StringVar(&config, "config", defaultConfigPath, "config file the service's daemon reads")
	return cmd
}

// serviceFor is the manager for config (whose shutdown drain sets the stop timeout) and the source
// binary: the one given, else the one this command was run as.
func serviceFor(cmd *cobra.Command, mgr func(*cobra.Command) *service.Manager, config, source string) (*service.Manager, string, error) {
	m := mgr(cmd)
	m.Paths.ConfigFile = config
	drain, err := drainTimeout(filepath.Join(m.Paths.Root, config))
	if err != nil {
		return nil, "", err
	}
	m.Drain = drain
	if source == "" {
		if source, err = invokedAs(); err != nil {
			return nil, "", withCode(exitUsage, fmt.Errorf("cannot tell which binary to install (%w); pass --source", err))
		}
	}
	return m, source, nil
}

// drainTimeout is the config's daemon.shutdown_drain_timeout, or 0 (the default) when the file
// does not exist yet. An invalid file is refused: the unit would be built on a guess.
func drainTimeout(path string) (time.Duration, error) {
	cfg, err := config.LoadWith(path, config.Options{Offline: true})
	var cerr *config.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case errors.As(err, &cerr):
		return 0, withCode(exitFailure, fmt.Errorf("%s is invalid, and its shutdown_drain_timeout sets the unit's stop timeout: fix it first (runner-manager validate --config %s)", path, path))
	case err != nil:
		return 0, withCode(exitUsage, err)
	}
	return cfg.Daemon.ShutdownDrainTimeout.D(), nil
}

func serviceSimpleCmd(mgr func(*cobra.Command) *service.Manager, use, short string, do func(context.Context, *service.Manager) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := do(cmd.Context(), mgr(cmd)); err != nil {
				return withCode(exitFailure, err)
			}
			return nil
		},
	}
}

func serviceStatusCmd(mgr func(*cobra.Command) *service.Manager, now func() time.Time) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show whether the service is installed and running, its versions and its health",
		Long: `Status combines the install (unit, private binary, source binary and their versions), the
service manager's view (state, pid) and, when its status socket answers, the daemon's own (config
reload result, last GitHub contact, runners owned). The last line is a one-line health verdict.
Exit status 0 when healthy, 1 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m := mgr(cmd)
			socket := status.SocketPath(filepath.Join(m.Paths.Root, m.Paths.StateDir))
			st := m.Status(cmd.Context(), socketSource(socket))
			if err := st.Render(cmd.OutOrStdout(), now()); err != nil {
				return withCode(exitFailure, err)
			}
			if !strings.HasPrefix(st.Verdict(now()), "healthy") {
				return withCode(exitFailure, nil)
			}
			return nil
		},
	}
}

// socketSource reads the daemon's status socket and keeps what `service status` shows.
type socketSource string

func (s socketSource) DaemonStatus(ctx context.Context) (service.DaemonStatus, error) {
	snap, err := status.Fetch(ctx, string(s))
	if err != nil {
		return service.DaemonStatus{}, err
	}
	d := service.DaemonStatus{Version: snap.Version, ConfigPath: snap.Config.Path, ReloadOK: snap.Config.LastReload.OK,
		ReloadAt: snap.Config.LastReload.At, ReloadError: strings.Join(snap.Config.LastReload.Error, "; "),
		LastGitHubContact: snap.GitHubLastContact}
	for _, t := range snap.Targets {
		d.RunnersBusy += t.Busy
		d.RunnersIdle += t.Idle
	}
	return d, nil
}

// skipServiceManager replaces systemctl/launchctl under --root: the tree is not this host's.
func skipServiceManager(cmd *cobra.Command) selfupdate.RunFunc {
	return func(_ context.Context, name string, args ...string) ([]byte, error) {
		if len(args) > 0 && (args[0] == "show" || args[0] == "print") {
			return nil, errors.New("not queried under --root")
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "skipped under --root: %s %s\n", name, strings.Join(args, " "))
		return nil, nil
	}
}

// invokedAs is the path this command was run by, not its resolved target: a package manager
// repoints a symlink like /usr/local/bin/runner-manager, and that path is what must be watched.
func invokedAs() (string, error) {
	arg0 := os.Args[0]
	if strings.Contains(arg0, string(os.PathSeparator)) {
		return filepath.Abs(arg0)
	}
	if p, err := exec.LookPath(arg0); err == nil {
		return filepath.Abs(p)
	}
	return os.Executable()
}
