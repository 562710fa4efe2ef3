package runner

import (
	"errors"
	"fmt"
	"syscall"
)

// ErrProcessNotFound: no live process has that pid (it never existed, exited, or is a zombie).
var ErrProcessNotFound = errors.New("process not found")

// ErrNotRunning: the process a Handle names is gone, or its pid now belongs to another process.
var ErrNotRunning = errors.New("shim is not running")

var errUnsupportedOS = errors.New("runner processes are supported on Linux, macOS and Windows only")

// procInfo is what the OS-specific files report about one pid.
type procInfo struct {
	startTime uint64 // OS-defined, stable for the life of the process (Linux: clock ticks since boot)
	zombie    bool   // exited but not yet reaped: it will never run again
}

// ProcessStartTime returns the start time of the live process pid, in the OS's own unit (Linux:
// clock ticks since boot, field 22 of /proc/<pid>/stat; macOS: microseconds since the epoch).
// The value only means something when compared with another ProcessStartTime result for the same
// pid. A zombie is not live: it yields ErrProcessNotFound.
func ProcessStartTime(pid int) (uint64, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("process start time: invalid pid %d", pid)
	}
	info, err := readProcInfo(pid)
	if err != nil {
		return 0, err
	}
	if info.zombie {
		return 0, fmt.Errorf("pid %d has exited (zombie): %w", pid, ErrProcessNotFound)
	}
	return info.startTime, nil
}

// Alive reports whether the process that had pid and startTime when it was recorded is still
// running. Pid reuse is not life: a different start time means a different process. A zombie is
// dead. An error means liveness could not be determined (for example /proc is not readable), and
// the caller must not conclude either way.
func Alive(pid int, startTime uint64) (bool, error) {
	got, err := ProcessStartTime(pid)
	if errors.Is(err, ErrProcessNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check whether pid %d is alive: %w", pid, err)
	}
	return got == startTime, nil
}

// signalIdentified sends sig to pid only if pid is still the process that started at startTime;
// otherwise it returns ErrNotRunning. The OS-specific signalVerified closes the window between
// the check and the kill where it can (Linux: pidfd).
func signalIdentified(pid int, startTime uint64, sig syscall.Signal) error {
	if pid <= 0 {
		return fmt.Errorf("signal pid %d: invalid pid: %w", pid, ErrNotRunning)
	}
	return signalVerified(pid, startTime, sig)
}
