//go:build !windows

package service

import (
	"context"
	"errors"
)

// UnderSCM reports whether the Windows service control manager started this process: never here.
func UnderSCM(bool) bool { return false }

// RunWindowsService runs the daemon as a Windows service; there is none off Windows.
func RunWindowsService(string, func(context.Context, <-chan struct{}) error, func(error) int) error {
	return errors.New("the Windows service control manager exists only on Windows")
}
