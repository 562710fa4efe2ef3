//go:build !linux

package dockerd

import (
	"errors"
	"os"
	"syscall"
)

// supported refuses: the container executor (and so its private engine) is Linux-only, as
// config.Validate says of executor = "container" on other systems. These files only keep the
// packages that use dockerd (e2e/dockertest, bench/cmd/benchmark) building on every OS.
func supported() error {
	return errors.New("a private dockerd runs on Linux only: the container executor and its tests need Linux")
}

var stopSignal = os.Kill

func groupAttr() *syscall.SysProcAttr { return nil }
func killGroup(int)                   {}
func unmountUnder(string) error       { return nil }
