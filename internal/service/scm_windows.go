//go:build windows

package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// systemSCM is the host's service control manager. Each call connects anew: `service` commands
// make a handful of calls, and a connection kept open would need an owner to close it.
func systemSCM() (SCM, error) { return winSCM{}, nil }

type winSCM struct{}

func connect() (*mgr.Mgr, error) {
	m, err := mgr.Connect()
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		return nil, fmt.Errorf("connecting to the service control manager: %w (run it as an Administrator, from an elevated prompt)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to the service control manager: %w", err)
	}
	return m, nil
}

// open opens the service name, mapping "does not exist" to ErrServiceMissing.
func open(name string) (*mgr.Mgr, *mgr.Service, error) {
	m, err := connect()
	if err != nil {
		return nil, nil, err
	}
	s, err := m.OpenService(name)
	if err != nil {
		m.Disconnect()
		if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
			return nil, nil, ErrServiceMissing
		}
		return nil, nil, err
	}
	return m, s, nil
}

func (winSCM) Install(w WindowsService) ([]string, error) {
	m, err := connect()
	if err != nil {
		return nil, err
	}
	defer m.Disconnect()
	cfg := mgr.Config{
		DisplayName: w.DisplayName, Description: w.Description,
		StartType: mgr.StartAutomatic, ErrorControl: mgr.ErrorNormal,
		ServiceStartName: w.Account, Password: w.Password,
	}
	if strings.EqualFold(w.Account, LocalSystem) {
		cfg.ServiceStartName = "" // the SCM's LocalSystem
	}
	s, err := m.OpenService(w.Name)
	switch {
	case errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST):
		if s, err = m.CreateService(w.Name, w.Binary, cfg, w.Args...); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default: // a reinstall: the same service, brought to this install's command line and account
		if err := update(s, w); err != nil {
			s.Close()
			return nil, err
		}
	}
	defer s.Close()
	// Every failure restarts, a non-zero exit too (75, the upgrade's handover): Restart=always.
	restart := mgr.RecoveryAction{Type: mgr.ServiceRestart, Delay: w.RestartDelay}
	if err := s.SetRecoveryActions([]mgr.RecoveryAction{restart, restart, restart}, uint32((24 * time.Hour).Seconds())); err != nil {
		return nil, fmt.Errorf("setting the recovery actions: %w", err)
	}
	err = s.SetRecoveryActionsOnNonCrashFailures(true)
	if errors.Is(err, windows.ERROR_INVALID_LEVEL) { // wine 8.0 has no SERVICE_CONFIG_FAILURE_ACTIONS_FLAG
		return []string{"this service control manager cannot restart a service that exits non-zero (SERVICE_CONFIG_FAILURE_ACTIONS_FLAG: " + err.Error() +
			"): after an upgrade's handover (exit 75) start it again with `runner-manager service start`"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("setting the recovery actions for a non-zero exit: %w", err)
	}
	return nil, nil
}

// update brings an existing service to w: ChangeServiceConfig and the description only, not
// mgr's UpdateConfig, which also sets the SID type and the delayed start, levels of
// ChangeServiceConfig2 that wine 8.0 refuses ("Invalid level") and install leaves at their defaults.
func update(s *mgr.Service, w WindowsService) error {
	account := w.Account
	if account == "" {
		account = LocalSystem
	}
	ptr := func(v string) *uint16 {
		if v == "" {
			return nil
		}
		p, _ := windows.UTF16PtrFromString(v) // the paths and names were checked: no NUL
		return p
	}
	if err := windows.ChangeServiceConfig(s.Handle, windows.SERVICE_WIN32_OWN_PROCESS, mgr.StartAutomatic, mgr.ErrorNormal,
		ptr(commandLine(w.Binary, w.Args)), nil, nil, nil, ptr(account), ptr(w.Password), ptr(w.DisplayName)); err != nil {
		return err
	}
	desc := windows.SERVICE_DESCRIPTION{Description: ptr(w.Description)}
	return windows.ChangeServiceConfig2(s.Handle, windows.SERVICE_CONFIG_DESCRIPTION, (*byte)(unsafe.Pointer(&desc)))
}

func commandLine(bin string, args []string) string {
	s := syscall.EscapeArg(bin)
	for _, a := range args {
		s += " " + syscall.EscapeArg(a)
	}
	return s
}

func (c winSCM) Remove(ctx context.Context, name string, timeout time.Duration) error {
	if err := c.Stop(ctx, name, timeout); err != nil && !errors.Is(err, ErrServiceMissing) {
		return err
	}
	m, s, err := open(name)
	if err != nil {
		return err
	}
	defer m.Disconnect()
	defer s.Close()
	return s.Delete()
}

func (winSCM) Start(name string) error {
	m, s, err := open(name)
	if err != nil {
		return err
	}
	defer m.Disconnect()
	defer s.Close()
	if err := s.Start(); err != nil && !errors.Is(err, windows.ERROR_SERVICE_ALREADY_RUNNING) {
		return err
	}
	return nil
}

// stopPoll is how often Stop asks the SCM whether the service stopped (the SCM has no wait call).
const stopPoll = 500 * time.Millisecond

func (winSCM) Stop(ctx context.Context, name string, timeout time.Duration) error {
	m, s, err := open(name)
	if err != nil {
		return err
	}
	defer m.Disconnect()
	defer s.Close()
	st, err := s.Control(svc.Stop)
	if err != nil && !errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for st.State != svc.Stopped {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the service did not stop within %s (it drains for at most daemon.shutdown_drain_timeout); see its log", timeout)
		case <-time.After(stopPoll):
		}
		if st, err = s.Query(); err != nil {
			return err
		}
	}
	return nil
}

func (winSCM) Query(name string) (string, int, error) {
	m, s, err := open(name)
	if err != nil {
		return "", 0, err
	}
	defer m.Disconnect()
	defer s.Close()
	st, err := s.Query()
	if err != nil {
		return "", 0, err
	}
	return stateName(st.State), int(st.ProcessId), nil
}

func stateName(s svc.State) string {
	switch s {
	case svc.Stopped:
		return "stopped"
	case svc.StartPending:
		return "start pending"
	case svc.StopPending:
		return "stop pending"
	case svc.Running:
		return "running"
	case svc.ContinuePending:
		return "continue pending"
	case svc.PausePending:
		return "pause pending"
	case svc.Paused:
		return "paused"
	}
	return fmt.Sprintf("state %d", s)
}

// SecureDir replaces dir's DACL with a protected one (nothing inherited from %ProgramData%, whose
// entries let every user read and create): full control for LocalSystem, the Administrators and
// account, inherited by everything in it.
func (winSCM) SecureDir(dir, account string) error {
	sddl := "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
	if account != "" {
		sid, _, _, err := windows.LookupSID("", account)
		if err != nil {
			return fmt.Errorf("looking up the account %q: %w", account, err)
		}
		sddl += fmt.Sprintf("(A;OICI;FA;;;%s)", sid.String())
	}
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	return windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
}
