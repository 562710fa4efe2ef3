//go:build windows

package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
)

// UnderSCM reports whether the Windows service control manager started this process: flagged
// says its command line has WindowsServiceFlag, which install registers.
func UnderSCM(flagged bool) bool {
	ok, err := svc.IsWindowsService()
	return flagged || err == nil && ok
}

// RunWindowsService runs the daemon (run) as the Windows service name under svc.Run, its controls
// translated for Controlled; exitCode maps run's error to the exit code the SCM records, non-zero
// ones as service-specific errors, which the recovery actions restart (75: an upgrade's handover).
// It returns once the daemon stopped.
func RunWindowsService(name string, run func(context.Context, <-chan struct{}) error, exitCode func(error) int) error {
	err := svc.Run(name, &handler{run: run, exitCode: exitCode})
	if errors.Is(err, windows.ERROR_FAILED_SERVICE_CONTROLLER_CONNECT) {
		return fmt.Errorf("%w: this is the Windows service's command line (%s); start the service with `runner-manager service start`, "+
			"or run the daemon in a console without %s", err, WindowsServiceFlag, WindowsServiceFlag)
	}
	return err
}

type handler struct {
	run      func(context.Context, <-chan struct{}) error
	exitCode func(error) int
}

// stopWaitHint is the SCM's wait hint while the daemon drains: DefaultDrainTimeout + StopMargin
// (the config's drain is read later, inside the daemon; the hint only paces the SCM's patience).
const stopWaitHint = DefaultDrainTimeout + StopMargin

const accepted = svc.AcceptStop | svc.AcceptShutdown | svc.AcceptParamChange

func (h *handler) Execute(_ []string, requests <-chan svc.ChangeRequest, changes chan<- svc.Status) (bool, uint32) {
	changes <- svc.Status{State: svc.StartPending}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	controls := make(chan Control)
	go func() { // ends with Execute (cancel)
		for {
			select {
			case <-ctx.Done():
				return
			case r := <-requests:
				c, ok := map[svc.Cmd]Control{svc.Interrogate: ControlInterrogate, svc.Stop: ControlStop,
					svc.Shutdown: ControlShutdown, svc.ParamChange: ControlParamChange}[r.Cmd]
				if !ok {
					continue
				}
				select {
				case controls <- c:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	report := func(s RunState, hint time.Duration) {
		st := svc.Status{State: svc.Running, Accepts: accepted}
		if s == StateStopPending {
			st = svc.Status{State: svc.StopPending, WaitHint: uint32(hint / time.Millisecond)}
		}
		changes <- st
	}
	err := Controlled(ctx, controls, report, stopWaitHint, h.run)
	if code := h.exitCode(err); code != 0 {
		return true, uint32(code)
	}
	return false, 0
}
