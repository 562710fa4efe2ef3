package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
	"github.com/runner-manager/runner-manager/selfupdate"
)

// Manager installs and controls the service on one host.
type Manager struct {
	System System
	Paths  Paths
	// Run runs systemctl/launchctl, and Probe runs binaries with --version; both default to
	// selfupdate.ExecRun. Tests give Run a fake so no service manager is needed.
	Run    selfupdate.RunFunc
	Probe  selfupdate.RunFunc
	Clock  func() time.Time // nil = time.Now
	Logger *slog.Logger     // nil = slog.Default()
	// Drain is the config's daemon.shutdown_drain_timeout (0: the default), which sets the unit's
	// stop timeout (Spec.Drain).
	Drain time.Duration
	// RunnerUsers, when set, are the config's per-slot runner users: Install creates the first
	// RunnerSlots (daemon.max_runners) of them ahead of the daemon, Uninstall removes every one when
	// RemoveRunnerUsers is set and otherwise reports them. Nil when runners run as the daemon's
	// user, or when the tree is not this host's (Paths.Root).
	RunnerUsers       RunnerUsers
	RunnerSlots       int
	RemoveRunnerUsers bool
	// SCM is the Windows service control manager (System Windows); nil is the host's.
	SCM SCM
	// Account and Password: the account the Windows service runs as ("": LocalSystem).
	Account, Password string
}

// RunnerUsers creates, lists and removes per-slot runner users; runner.SlotUsers is the one
// implementation (it owns their names and how they are made).
type RunnerUsers interface {
	Provision(ctx context.Context, n int) (created []string, err error)
	Existing() ([]string, error)
	Remove(ctx context.Context, name string) error
}

// Uninstalled says what Uninstall did with the runner users.
type Uninstalled struct {
	RunnerUsersRemoved []string
	RunnerUsersKept    []string // RemoveRunnerUsers unset: they stay, as the state directory does
}

// Spec is what the unit or plist of this install runs.
func (m *Manager) Spec(source string) Spec {
	p := m.Paths
	return Spec{Binary: p.Binary(), Config: p.ConfigFile, Source: source, Log: p.LogFile, Drain: m.Drain, StateDir: p.agentStateDir()}
}

// Render is the unit file (or plist, or on Windows a description of the service) Install writes for source.
func (m *Manager) Render(source string) (string, error) {
	if m.System == Windows {
		return WindowsDescription(m.windowsService(source))
	}
	return m.render(m.Spec(source))
}

// Install copies source to the private binary, proves the copy runs, writes the install record and
// the unit (or plist), and enables it; it does not start it. A reinstall replaces all of that, drops a
// leftover .old and forgets a version the crash-loop guard rejected. Config and journal are kept.
func (m *Manager) Install(ctx context.Context, source string) (Record, error) {
	rec, err := m.install(ctx, source)
	if errors.Is(err, fs.ErrPermission) && !m.Paths.Agent() {
		how := "root: use sudo"
		if m.System == Windows {
			how = "an Administrator: run it from an elevated prompt"
		}
		err = fmt.Errorf("%w (installing a system service needs %s)", err, how)
	}
	return rec, err
}

func (m *Manager) install(ctx context.Context, source string) (Record, error) {
	p := m.Paths
	bin := p.Binary()
	if !filepath.IsAbs(source) {
		return Record{}, fmt.Errorf("service install: source binary %q must be an absolute path", source)
	}
	if filepath.Clean(p.onDisk(source)) == filepath.Clean(p.onDisk(bin)) {
		return Record{}, fmt.Errorf("service install: %s is the service's private copy; run install from the binary your package manager updates (or pass --source)", source)
	}
	ver, err := selfupdate.ProbeVersion(ctx, m.Probe, p.onDisk(source), 0)
	if err != nil {
		return Record{}, fmt.Errorf("service install: the source binary does not run: %w", err)
	}
	unit, err := m.Render(source)
	if err != nil {
		return Record{}, fmt.Errorf("service install: %w", err)
	}
	// Before anything is installed: a host that cannot make the users is told at once.
	var created []string
	if m.RunnerUsers != nil {
		if created, err = m.RunnerUsers.Provision(ctx, m.RunnerSlots); err != nil {
			return Record{}, fmt.Errorf("service install: creating the runner users (created so far: %v): %w", created, err)
		}
	}
	// 0700 even if it existed: credentials and the journal live there (systemd enforces it too).
	if err := os.MkdirAll(p.onDisk(p.StateDir), 0o700); err != nil {
		return Record{}, fmt.Errorf("service install: creating the state directory: %w", err)
	}
	if err := os.Chmod(p.onDisk(p.StateDir), 0o700); err != nil {
		return Record{}, fmt.Errorf("service install: securing the state directory: %w", err)
	}
	for _, dir := range []string{p.BinDir, p.UnitDir} {
		if dir == "" { // Windows: no unit directory
			continue
		}
		if err := os.MkdirAll(p.onDisk(dir), 0o755); err != nil {
			return Record{}, fmt.Errorf("service install: creating %s: %w", dir, err)
		}
	}
	// The one swap upgrades use: on Windows a running service's binary is renamed aside, not
	// replaced (refused there), so a reinstall works while the service runs.
	copier := selfupdate.Installer{Target: p.onDisk(bin)}
	stillRunning, err := copier.Replace(p.onDisk(source))
	if err != nil {
		return Record{}, fmt.Errorf("service install: %w", err)
	}
	if got, err := selfupdate.ProbeVersion(ctx, m.Probe, p.onDisk(bin), 0); err != nil || got != ver {
		return Record{}, fmt.Errorf("service install: the copy at %s does not run as %s (got %q, %v); check the disk and retry", bin, ver, got, err)
	}
	if err := os.Remove(p.onDisk(filepath.Join(p.StateDir, selfupdate.GuardStateFile))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Record{}, fmt.Errorf("service install: forgetting the crash-loop guard's record: %w", err)
	}
	rec := Record{System: m.System, Source: source, Binary: bin, Config: p.ConfigFile,
		Unit: p.UnitFile(m.System), Version: ver, InstalledAt: m.now().UTC(), RunnerUsersCreated: created}
	if err := writeRecord(p.onDisk(p.StateDir), rec); err != nil {
		return Record{}, fmt.Errorf("service install: %w", err)
	}
	if m.System == Windows {
		if rec.Notes, err = m.installWindows(m.windowsService(source)); err != nil {
			return rec, fmt.Errorf("service install: the private copy is in place but %w", err)
		}
		if stillRunning {
			rec.Notes = append(rec.Notes, fmt.Sprintf("the service still runs the previous version (%s%s) until it restarts: runner-manager service stop, then runner-manager service start", bin, selfupdate.RejectedSuffix))
		}
		m.logger().Info("service installed", "service", rec.Unit, "binary", bin, "version", ver, "source", source)
		return rec, nil
	}
	if err := atomicfile.Write(p.onDisk(rec.Unit), []byte(unit), 0o644); err != nil {
		return Record{}, fmt.Errorf("service install: %w", err)
	}
	if err := m.manage(ctx, "enable"); err != nil {
		return rec, fmt.Errorf("service install: %s is written but %w", rec.Unit, err)
	}
	m.logger().Info("service installed", "unit", rec.Unit, "binary", bin, "version", ver, "source", source)
	return rec, nil
}

// Uninstall stops and disables the service and removes the unit, the private binary (and .old) and
// the install record. Runners keep running (KillMode=process); the state directory and the config are
// kept so a reinstall adopts them. The runner users are kept too (and reported) unless
// RemoveRunnerUsers is set: then each is removed, its processes killed first.
func (m *Manager) Uninstall(ctx context.Context) (Uninstalled, error) {
	p := m.Paths
	if ok, err := m.installed(); err != nil {
		return Uninstalled{}, fmt.Errorf("service uninstall: %w", err)
	} else if !ok {
		return Uninstalled{}, fmt.Errorf("service uninstall: %s does not exist; the service is not installed", p.UnitFile(m.System))
	}
	var done Uninstalled
	var errs []error
	// On Windows this returns once the service stopped: only then may its binary be removed.
	if err := m.manage(ctx, "disable"); err != nil {
		errs = append(errs, err)
	}
	files := []string{p.Binary(), p.Binary() + selfupdate.OldSuffix, filepath.Join(p.StateDir, RecordFile)}
	if m.System != Windows { // there the "unit" is the SCM's entry, deleted above
		files = append([]string{p.UnitFile(m.System)}, files...)
	}
	for _, f := range files {
		if err := os.Remove(p.onDisk(f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", f, err))
		}
	}
	if m.System == Systemd {
		if err := m.systemctl(ctx, "daemon-reload"); err != nil {
			errs = append(errs, err)
		}
	}
	if m.RunnerUsers != nil {
		names, err := m.RunnerUsers.Existing()
		errs = append(errs, err)
		for _, name := range names {
			if !m.RemoveRunnerUsers {
				done.RunnerUsersKept = append(done.RunnerUsersKept, name)
			} else if err := m.RunnerUsers.Remove(ctx, name); err != nil {
				errs = append(errs, err)
				done.RunnerUsersKept = append(done.RunnerUsersKept, name)
			} else {
				done.RunnerUsersRemoved = append(done.RunnerUsersRemoved, name)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return done, fmt.Errorf("service uninstall: %w", err)
	}
	return done, nil
}

// Start starts the installed service.
func (m *Manager) Start(ctx context.Context) error {
	if err := m.manage(ctx, "start"); err != nil {
		return fmt.Errorf("service start: %w", err)
	}
	return nil
}

// Stop stops the daemon; it drains for at most the shutdown bound and leaves runners running.
func (m *Manager) Stop(ctx context.Context) error {
	if err := m.manage(ctx, "stop"); err != nil {
		return fmt.Errorf("service stop: %w", err)
	}
	return nil
}

func (m *Manager) render(s Spec) (string, error) {
	if m.System == Launchd {
		return LaunchdPlist(s)
	}
	return SystemdUnit(s)
}

// manage maps an action onto the service manager's commands.
func (m *Manager) manage(ctx context.Context, action string) error {
	if m.System == Windows {
		return m.manageWindows(ctx, action)
	}
	if m.System == Launchd {
		return m.launchdAction(ctx, action)
	}
	switch action {
	case "enable":
		if err := m.systemctl(ctx, "daemon-reload"); err != nil {
			return err
		}
		return m.systemctl(ctx, "enable", UnitName)
	case "disable":
		return m.systemctl(ctx, "disable", "--now", UnitName)
	}
	return m.systemctl(ctx, action, UnitName)
}

// installed reports whether the service is installed: its unit file exists, or on Windows the
// SCM knows it.
func (m *Manager) installed() (bool, error) {
	if m.System == Windows {
		_, _, ok, err := m.windowsState()
		return ok, err
	}
	_, err := os.Stat(m.Paths.onDisk(m.Paths.UnitFile(m.System)))
	return !errors.Is(err, fs.ErrNotExist), nil
}

func (m *Manager) systemctl(ctx context.Context, args ...string) error {
	return m.command(ctx, "systemctl", args...)
}

func (m *Manager) launchctl(ctx context.Context, args ...string) error {
	return m.command(ctx, "launchctl", args...)
}

func (m *Manager) command(ctx context.Context, name string, args ...string) error {
	run := m.Run
	if run == nil {
		run = selfupdate.ExecRun
	}
	if _, err := run(ctx, name, args...); err != nil {
		return fmt.Errorf("`%s %s` failed: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

func (m *Manager) now() time.Time {
	if m.Clock != nil {
		return m.Clock()
	}
	return time.Now()
}

func (m *Manager) logger() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return slog.Default()
}
