//go:build windows

package runner

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/windows"
)

// readProcInfo opens pid by handle. Its start time is its creation time (100 ns intervals since
// 1601, GetProcessTimes); a process that has exited but whose object another handle keeps is
// reported as a zombie. A process this account may not open cannot be a shim of this daemon (it
// runs as the daemon's account): it counts as not found.
func readProcInfo(pid int) (procInfo, error) {
	h, err := openProcess(pid, windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE)
	if err != nil {
		return procInfo{}, err
	}
	defer windows.CloseHandle(h)
	return infoOf(h, pid)
}

func openProcess(pid int, access uint32) (windows.Handle, error) {
	h, err := windows.OpenProcess(access, false, uint32(pid))
	switch {
	case errors.Is(err, windows.ERROR_INVALID_PARAMETER):
		return 0, fmt.Errorf("pid %d: %w", pid, ErrProcessNotFound)
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		return 0, fmt.Errorf("pid %d belongs to a process this account cannot open, so not to one of its shims: %w", pid, ErrProcessNotFound)
	case err != nil:
		return 0, fmt.Errorf("open process %d: %w", pid, err)
	}
	return h, nil
}

func infoOf(h windows.Handle, pid int) (procInfo, error) {
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return procInfo{}, fmt.Errorf("read process times of pid %d: %w", pid, err)
	}
	ev, err := windows.WaitForSingleObject(h, 0)
	if err != nil {
		return procInfo{}, fmt.Errorf("check whether pid %d has exited: %w", pid, err)
	}
	start := uint64(created.HighDateTime)<<32 | uint64(created.LowDateTime)
	return procInfo{startTime: start, zombie: ev == windows.WAIT_OBJECT_0}, nil
}

// signalVerified opens pid first and checks its creation time on that handle, so what it acts on
// is the recorded process: a handle never names a process that reused the pid. SIGKILL is
// TerminateProcess; stopAsk sets the shim's stop event. Windows has no other signals.
func signalVerified(pid int, startTime uint64, sig syscall.Signal) error {
	h, err := openProcess(pid, windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE|windows.PROCESS_TERMINATE)
	if errors.Is(err, ErrProcessNotFound) {
		return fmt.Errorf("signal pid %d: %w", pid, ErrNotRunning)
	}
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	info, err := infoOf(h, pid)
	if err != nil {
		return err
	}
	if info.zombie || info.startTime != startTime {
		return fmt.Errorf("signal pid %d: it exited or the pid was reused: %w", pid, ErrNotRunning)
	}
	switch sig {
	case syscall.SIGKILL:
		if err := windows.TerminateProcess(h, treeKilledCode); err != nil {
			return fmt.Errorf("terminate pid %d: %w", pid, err)
		}
		return nil
	case stopAsk:
		return setStopEvent(Handle{PID: pid, StartTime: startTime})
	default:
		return fmt.Errorf("signal pid %d with %v: Windows has no signals but a kill and the shim's stop event", pid, sig)
	}
}
