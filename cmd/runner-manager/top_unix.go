//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize delivers the terminal's SIGWINCH to c (followSize).
func notifyResize(c chan<- os.Signal) { signal.Notify(c, syscall.SIGWINCH) }
