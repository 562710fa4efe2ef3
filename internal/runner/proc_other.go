//go:build !linux && !darwin

package runner

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
)

var errUnsupportedOS = errors.New("runner processes are supported on Linux and macOS only")

func readProcInfo(pid int) (procInfo, error) {
	return procInfo{}, fmt.Errorf("read process state of pid %d on %s: %w", pid, runtime.GOOS, errUnsupportedOS)
}

func signalVerified(pid int, _ uint64, _ syscall.Signal) error {
	return fmt.Errorf("signal pid %d on %s: %w", pid, runtime.GOOS, errUnsupportedOS)
}

func awaitExitKeepZombie(int) error { return errUnsupportedOS }
