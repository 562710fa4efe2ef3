package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WindowsServiceName is the service's name in the Windows service control manager.
const WindowsServiceName = "runner-manager"

// WindowsServiceFlag, on the daemon's command line the SCM runs, says the process is the
// service: svc.IsWindowsService alone cannot tell under wine 8.0 (its services.exe is not in
// session 0), and a console run of that command line then fails at once saying so.
const WindowsServiceFlag = "--windows-service"

// LocalSystem is the account the Windows service runs as unless install names another.
const LocalSystem = "LocalSystem"

// ErrServiceMissing is SCM.Query's answer for a service that does not exist.
var ErrServiceMissing = errors.New("the service does not exist")

// SCM is the part of the Windows service control manager Manager uses. scm_windows.go is the one
// implementation (golang.org/x/sys/windows/svc/mgr and the file ACL calls); tests give a fake, so
// what install does and in which order is tested on any OS.
type SCM interface {
	// Install creates the service as s says, or updates an existing one to it; notes say what of
	// it this SCM could not do that is not worth failing the install for.
	Install(s WindowsService) (notes []string, err error)
	// Remove stops the service, waiting at most timeout for it to stop, then deletes it.
	Remove(ctx context.Context, name string, timeout time.Duration) error
	Start(name string) error
	// Stop sends the stop control and waits at most timeout for the service to stop.
	Stop(ctx context.Context, name string, timeout time.Duration) error
	// Query is the service's state ("running", "stopped", "start pending", ...) and its pid (0
	// when not running); ErrServiceMissing when there is no such service.
	Query(name string) (state string, pid int, err error)
	// SecureDir gives dir (and what it will hold) a DACL of its own that only LocalSystem, the
	// Administrators and account (LocalSystem or "" for none more) pass: the state directory holds
	// the credential, the journal, the status token and the binary the service runs.
	SecureDir(dir, account string) error
}

// WindowsService is what install registers with the SCM.
type WindowsService struct {
	Name, DisplayName, Description string
	Binary                         string   // the private copy
	Args                           []string // daemon --config ... --upgrade-source ...
	// Account runs the service: LocalSystem, a virtual account ("NT SERVICE\runner-manager"), a
	// managed service account, or a user (".\name" with Password). Runners run as it too.
	Account, Password string
	// RestartDelay is the recovery action's wait: the SCM restarts the service after every
	// failure, a non-zero exit included (75: an upgrade's handover), like the unit's Restart=always.
	RestartDelay time.Duration
	StopTimeout  time.Duration // how long a stop may drain (Spec.StopTimeoutSeconds)
}

// windowsRestartDelay is WindowsService.RestartDelay, the unit's RestartSec.
const windowsRestartDelay = 5 * time.Second

// windowsService is what install registers for source.
func (m *Manager) windowsService(source string) WindowsService {
	s := m.Spec(source)
	account := m.Account
	if account == "" {
		account = LocalSystem
	}
	return WindowsService{
		Name:        WindowsServiceName,
		DisplayName: "runner-manager",
		Description: "Autoscaled GitHub Actions just-in-time runners (runner-manager). Stopping it drains; runners keep their jobs.",
		Binary:      s.Binary,
		Args:        []string{"daemon", WindowsServiceFlag, "--config", s.Config, SourceFlag, s.Source},
		Account:     account, Password: m.Password,
		RestartDelay: windowsRestartDelay,
		StopTimeout:  time.Duration(s.StopTimeoutSeconds()) * time.Second,
	}
}

// WindowsDescription renders what install registers, for `service unit` (no password).
func WindowsDescription(w WindowsService) (string, error) {
	for _, v := range append([]string{w.Binary}, w.Args...) {
		if strings.ContainsAny(v, "\n\r\x00\"") {
			return "", fmt.Errorf("service path %q contains a line break or a quote; choose a plainer path", v)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# What \"runner-manager service install\" registers with the Windows service control manager.\n")
	fmt.Fprintf(&b, "service:      %s (%s)\n", w.Name, w.DisplayName)
	fmt.Fprintf(&b, "command line: \"%s\" %s\n", w.Binary, strings.Join(quoteAll(w.Args), " "))
	fmt.Fprintf(&b, "start:        automatic, at boot\n")
	fmt.Fprintf(&b, "account:      %s (runners run as this account too)\n", w.Account)
	fmt.Fprintf(&b, "recovery:     restart after %s on every failure, a non-zero exit included (75: upgrade handover); the count resets after a day\n", w.RestartDelay)
	fmt.Fprintf(&b, "stop:         drains for at most %s (daemon.shutdown_drain_timeout + %s); runners keep running their jobs\n", w.StopTimeout, StopMargin)
	return b.String(), nil
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " \t") {
			out[i] = `"` + a + `"` // WindowsDescription refused quotes inside
		}
	}
	return out
}

func (m *Manager) scm() (SCM, error) {
	if m.SCM != nil {
		return m.SCM, nil
	}
	return systemSCM()
}

// installWindows registers the service with the SCM (after the private copy and the record are in
// place, as the unit is written last on Linux), then restricts the state directory to the service's
// account and the Administrators (the account exists now, a virtual one included) and makes the
// log directory. Under Root (an image tree) the SCM is not this host's and is not called.
func (m *Manager) installWindows(ws WindowsService) (notes []string, err error) {
	if err := os.MkdirAll(m.Paths.onDisk(filepath.Dir(m.Paths.LogFile)), 0o700); err != nil {
		return nil, fmt.Errorf("creating the log directory: %w", err)
	}
	if m.Paths.Root != "" && m.SCM == nil {
		return nil, nil
	}
	scm, err := m.scm()
	if err != nil {
		return nil, err
	}
	if notes, err = scm.Install(ws); err != nil {
		return nil, fmt.Errorf("registering the service: %w", err)
	}
	account := ws.Account
	if strings.EqualFold(account, LocalSystem) {
		account = ""
	}
	if err := scm.SecureDir(m.Paths.onDisk(m.Paths.StateDir), account); err != nil {
		return nil, fmt.Errorf("restricting %s to %s and the Administrators: %w", m.Paths.StateDir, ws.Account, err)
	}
	return notes, nil
}

// manageWindows maps an action onto the SCM.
func (m *Manager) manageWindows(ctx context.Context, action string) error {
	scm, err := m.scm()
	if err != nil {
		return err
	}
	stop := time.Duration(m.Spec("").StopTimeoutSeconds()) * time.Second
	switch action {
	case "start":
		err = scm.Start(WindowsServiceName)
	case "stop":
		err = scm.Stop(ctx, WindowsServiceName, stop)
	case "disable":
		err = scm.Remove(ctx, WindowsServiceName, stop)
	default:
		return fmt.Errorf("unknown action %q", action)
	}
	if err != nil {
		return fmt.Errorf("service %s (Windows service control manager): %w", action, err)
	}
	return nil
}

// windowsState asks the SCM for the service's state and pid; installed is false when it does not exist.
func (m *Manager) windowsState() (state string, pid int, installed bool, err error) {
	scm, err := m.scm()
	if err != nil {
		return "", 0, false, err
	}
	state, pid, err = scm.Query(WindowsServiceName)
	if errors.Is(err, ErrServiceMissing) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, true, err
	}
	return state, pid, true, nil
}
