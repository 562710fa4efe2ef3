//go:build darwin

package runner

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// szomb is SZOMB from <sys/proc.h>; x/sys does not export it.
const szomb = 5

func readProcInfo(pid int) (procInfo, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || kp.Proc.P_pid != int32(pid) {
		// sysctl answers a missing pid with an empty record, which x/sys reports as an error;
		// kill(pid, 0) tells "gone" from a real failure.
		if kerr := unix.Kill(pid, 0); errors.Is(kerr, unix.ESRCH) {
			return procInfo{}, fmt.Errorf("pid %d: %w", pid, ErrProcessNotFound)
		}
		if err == nil {
			err = fmt.Errorf("sysctl returned a record for pid %d", kp.Proc.P_pid)
		}
		return procInfo{}, fmt.Errorf("read process state of pid %d: %w", pid, err)
	}
	tv := kp.Proc.P_starttime
	return procInfo{
		startTime: uint64(tv.Sec)*1_000_000 + uint64(tv.Usec),
		zombie:    kp.Proc.P_stat == szomb,
	}, nil
}

// signalVerified checks then kills; macOS has no pidfd, so a pid reused in between the two calls
// (microseconds) could be signalled. Pids cycle slowly enough that this is accepted.
func signalVerified(pid int, startTime uint64, sig syscall.Signal) error {
	alive, err := Alive(pid, startTime)
	if err != nil {
		return err
	}
	if !alive {
		return fmt.Errorf("signal pid %d: it exited or the pid was reused: %w", pid, ErrNotRunning)
	}
	if err := unix.Kill(pid, sig); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("signal pid %d: %w", pid, ErrNotRunning)
		}
		return fmt.Errorf("signal pid %d with %v: %w", pid, sig, err)
	}
	return nil
}

// awaitExitKeepZombie is not available (x/sys has no waitid on macOS): the shim then does not
// sweep the runner's process group, rather than risk signalling a reused group id.
func awaitExitKeepZombie(int) error { return errors.ErrUnsupported }
