//go:build !windows

package main

import (
	"os"
	"syscall"
)

// maxRSSKiB is getrusage's ru_maxrss of an exited child (KiB on Linux, where the bench runs).
func maxRSSKiB(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss)
	}
	return 0
}
