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
	"github.com/runner-manager/runner-manager/internal/redact"
	"github.com/runner-manager/runner-manager/internal/runner"
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
		serviceUninstallCmd(mgr),
		serviceSimpleCmd(mgr, "start", "Start the installed service",
			func(ctx context.Context, m *service.Manager) error { return m.Start(ctx) }),
		serviceSimpleCmd(mgr, "stop", "Stop the daemon (drains at most 60 s; runners keep running their jobs)",
			func(ctx context.Context, m *service.Manager) error { return m.Stop(ctx) }),
		serviceStatusCmd(mgr, now),
	)
	return cmd
}

func serviceInstallCmd(mgr func(*cobra.Command) *service.Manager) *cobra.Command {
	var source, config, account, passwordFile string
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install the service from this binary and enable it (start it with service start)",
		Long: `install copies this binary to a private path, writes the systemd unit (or launchd plist) that
runs it and enables it. The unit's stop timeout is the config's daemon.shutdown_drain_timeout
+ 30 s (the default 60 s when the config does not exist yet): reinstall after raising it.
service unit prints the same unit without installing anything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, d, source, err := serviceFor(cmd, mgr, config, source)
			if err != nil {
				return err
			}
			if err := windowsAccount(cmd, m, account, passwordFile); err != nil {
				return err
			}
			users := &runner.SlotUsers{Prefix: d.RunnerUserPrefix}
			perSlot, why := d.PerSlotRunners(true), notHere(m)
			if perSlot && why == "" {
				m.RunnerUsers, m.RunnerSlots = users, d.MaxRunners
			}
			rec, err := m.Install(cmd.Context(), source)
			if err != nil {
				return withCode(exitFailure, err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "installed runner-manager %s as %s\n", rec.Version, rec.Unit)
			fmt.Fprintf(out, "  runs:    %s (private copy)\n  watches: %s (replace it to upgrade)\n  config:  %s\n", rec.Binary, rec.Source, rec.Config)
			switch {
			case m.System == service.Windows:
				fmt.Fprintf(out, "  account: %s; runners run as this account too (no per-slot users on Windows: docs/operations.md, \"Windows\")\n  logs:    %s\n",
					orDefault(m.Account, service.LocalSystem), m.Paths.LogFile)
			case m.RunnerUsers != nil:
				fmt.Fprintf(out, "  runner users: %s to %s (daemon.max_runners = %d); created: %s\n",
					users.Name(0), users.Name(d.MaxRunners-1), d.MaxRunners, listOrNone(rec.RunnerUsersCreated))
			case perSlot:
				fmt.Fprintf(out, "  runner users: not created (%s); the daemon, as root, creates %s to %s at their slots' first launch\n",
					why, users.Name(0), users.Name(d.MaxRunners-1))
			default:
				fmt.Fprintln(out, "  runner users: none (daemon.runner_user = \"daemon\": runners run as the daemon's user)")
			}
			for _, n := range rec.Notes {
				fmt.Fprintf(out, "note: %s\n", n)
			}
			if _, err := os.Stat(filepath.Join(m.Paths.Root, rec.Config)); err != nil {
				fmt.Fprintf(out, "note: %s does not exist yet; write it (runner-manager config init --config %s) before starting\n", rec.Config, rec.Config)
			}
			fmt.Fprintln(out, "start it with: runner-manager service start")
			return nil
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the binary to install and to watch for upgrades (default: the one you ran)")
	cmd.Flags().StringVar(&config, "config", defaultConfigPath, "config file the service's daemon reads")
	cmd.Flags().StringVar(&account, "account", "", `Windows: the account the service (and so every runner) runs as, e.g. "NT SERVICE\runner-manager" (default LocalSystem)`)
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "Windows: a file holding --account's password (a user account's; virtual and managed service accounts have none)")
	return cmd
}

// windowsAccount sets the Windows service's account from --account and --password-file, which
// are refused elsewhere: systemd and launchd run the daemon as root.
func windowsAccount(cmd *cobra.Command, m *service.Manager, account, passwordFile string) error {
	if m.System != service.Windows {
		if account != "" || passwordFile != "" {
			return withCode(exitUsage, errors.New("--account and --password-file are for the Windows service; the systemd unit and the launchd daemon run as root"))
		}
		return nil
	}
	m.Account = account
	if passwordFile != "" {
		b, err := os.ReadFile(passwordFile)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--password-file: %w", err))
		}
		m.Password = strings.TrimRight(string(b), "\r\n")
		redact.FromContext(cmd.Context()).Learn(m.Password) // never printed, whatever fails
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func serviceUninstallCmd(mgr func(*cobra.Command) *service.Manager) *cobra.Command {
	var config string
	var removeUsers, refuseBusy bool
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop and remove the service (runners, config, state and runner users are kept)",
		Long: `uninstall stops and disables the service and removes its unit and private binary. Runners keep
running their jobs; the config and the state directory are kept, so a reinstall adopts them. The
per-slot runner users (daemon.runner_user_prefix followed by the slot) are kept and listed, unless
--remove-runner-users is given: then each is removed (its processes killed, its files in /tmp,
/var/tmp and /dev/shm and its home removed). With --refuse-busy (the packages' removal script) it
asks the running daemon first and changes nothing while any runner is busy with a job.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m := mgr(cmd)
			d, err := daemonSettings(filepath.Join(m.Paths.Root, config))
			if err != nil {
				return err
			}
			if m.Paths.Root == "" && m.System != service.Windows {
				m.RunnerUsers = &runner.SlotUsers{Prefix: d.RunnerUserPrefix}
			}
			m.RemoveRunnerUsers = removeUsers
			if refuseBusy {
				if err := refuseWhileBusy(cmd, m); err != nil {
					return err
				}
			}
			done, err := m.Uninstall(cmd.Context())
			out := cmd.OutOrStdout()
			if len(done.RunnerUsersRemoved) > 0 {
				fmt.Fprintf(out, "removed runner users: %s\n", strings.Join(done.RunnerUsersRemoved, ", "))
			}
			if len(done.RunnerUsersKept) > 0 {
				fmt.Fprintf(out, "runner users kept: %s\nremove them with: userdel -r %s\n", strings.Join(done.RunnerUsersKept, ", "),
					strings.Join(done.RunnerUsersKept, " && userdel -r "))
			}
			if err != nil {
				return withCode(exitFailure, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&config, "config", defaultConfigPath, "config file naming the runner users (daemon.runner_user_prefix)")
	cmd.Flags().BoolVar(&removeUsers, "remove-runner-users", false, "also remove the per-slot runner users and everything they own")
	cmd.Flags().BoolVar(&refuseBusy, "refuse-busy", false, "change nothing while the daemon reports a runner busy with a job")
	return cmd
}

// refuseWhileBusy fails while the service's daemon reports busy runners: a package removal would
// otherwise stop the daemon under their jobs (they keep running, but nothing ends their runners
// until a reinstall adopts them). A daemon that does not answer has nothing to protect, or cannot
// say (no status socket): the uninstall goes on and says so.
func refuseWhileBusy(cmd *cobra.Command, m *service.Manager) error {
	socket := status.SocketPath(filepath.Join(m.Paths.Root, m.Paths.StateDir))
	snap, err := status.Fetch(cmd.Context(), socket)
	if err != nil {
		fmt.Fprintf(cmd.OutOrStdout(), "the daemon did not answer on %s (%v): uninstalling without checking for busy runners\n", socket, err)
		return nil
	}
	busy := 0
	for _, t := range snap.Targets {
		busy += t.Busy
	}
	if busy > 0 {
		return withCode(exitFailure, fmt.Errorf("service uninstall: %d runner(s) busy with jobs; nothing was changed. Wait for the jobs to end "+
			"(runner-manager runners) and try again, or run runner-manager service uninstall yourself (busy runners finish their jobs; a reinstall adopts them)", busy))
	}
	return nil
}

// notHere says why install cannot create runner users on this host ("" when it can). The
// service's daemon is root under the shipped unit, so the config's per-slot users are its.
func notHere(m *service.Manager) string {
	switch {
	case m.System == service.Windows:
		return "Windows: runners run as the service's account"
	case m.Paths.Root != "":
		return "--root: the tree's users are not this host's"
	case os.Geteuid() != 0:
		return "install is not running as root"
	}
	return ""
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none (all existed)"
	}
	return strings.Join(names, ", ")
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
			m, _, source, err := serviceFor(cmd, mgr, config, source)
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
func serviceFor(cmd *cobra.Command, mgr func(*cobra.Command) *service.Manager, config, source string) (*service.Manager, config.Daemon, string, error) {
	m := mgr(cmd)
	m.Paths.ConfigFile = config
	d, err := daemonSettings(filepath.Join(m.Paths.Root, config))
	if err != nil {
		return nil, d, "", err
	}
	m.Drain = d.ShutdownDrainTimeout.D()
	if source == "" {
		if source, err = invokedAs(); err != nil {
			return nil, d, "", withCode(exitUsage, fmt.Errorf("cannot tell which binary to install (%w); pass --source", err))
		}
	}
	return m, d, source, nil
}

// daemonSettings is the config's [daemon] (its shutdown_drain_timeout sets the unit's stop
// timeout; runner_user, runner_user_prefix and max_runners name the runner users), or the defaults
// when the file does not exist yet. An invalid file is refused: the install would be built on a guess.
func daemonSettings(path string) (config.Daemon, error) {
	cfg, err := config.LoadWith(path, config.Options{Offline: true})
	var cerr *config.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return config.Daemon{MaxRunners: config.DefaultMaxRunners, RunnerUserPrefix: config.DefaultRunnerUserPrefix}, nil
	case errors.As(err, &cerr):
		return config.Daemon{}, withCode(exitFailure, fmt.Errorf("%s is invalid, and its [daemon] settings shape the service (stop timeout, runner users): fix it first (runner-manager validate --config %s)", path, path))
	case err != nil:
		return config.Daemon{}, withCode(exitUsage, err)
	}
	return cfg.Daemon, nil
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
