//go:build linux

package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

func readProcInfo(pid int) (procInfo, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return procInfo{}, fmt.Errorf("pid %d: %w", pid, ErrProcessNotFound)
	}
	if err != nil {
		return procInfo{}, fmt.Errorf("read process state of pid %d: %w", pid, err)
	}
	info, err := parseProcStat(data)
	if err != nil {
		return procInfo{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	return info, nil
}

// signalVerified opens a pidfd first and checks the start time second: if the check passes, the
// pidfd necessarily names the recorded process (it held the pid before and still holds it), and
// a pidfd never signals a process that reused the pid afterwards. Kernels without pidfd (< 5.3)
// fall back to check-then-kill.
func signalVerified(pid int, startTime uint64, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal pid %d: %w", pid, ErrNotRunning)
	}
	pidfd := err == nil
	if pidfd {
		defer unix.Close(fd)
	}
	alive, err := Alive(pid, startTime)
	if err != nil {
		return err
	}
	if !alive {
		return fmt.Errorf("signal pid %d: it exited or the pid was reused: %w", pid, ErrNotRunning)
	}
	if pidfd {
		err = unix.PidfdSendSignal(fd, sig, nil, 0)
	} else {
		err = unix.Kill(pid, sig)
	}
	if errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal pid %d: %w", pid, ErrNotRunning)
	}
	if err != nil {
		return fmt.Errorf("signal pid %d with %v: %w", pid, sig, err)
	}
	return nil
}

// awaitExitKeepZombie blocks until pid has exited but leaves it unreaped, so neither its pid nor
// the process group named after it can be reused until the caller reaps it.
func awaitExitKeepZombie(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
