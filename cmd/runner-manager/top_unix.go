//go:build !windows

package main

import (
	"os"
	"syscall"
)

// resizeSignals tell top the terminal changed size.
var resizeSignals = []os.Signal{syscall.SIGWINCH}
