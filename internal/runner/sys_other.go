//go:build !unix

package runner

import (
	"os"
	"syscall"
)

// Runner processes need sessions and POSIX signals; on other systems Start and RunShim refuse.
const supportedOS = false

const stopAsk = syscall.Signal(0x1e)

var deafTo []os.Signal

func newSession() *syscall.SysProcAttr { return nil }
func ownGroup() *syscall.SysProcAttr   { return nil }
func closeInheritedOnExec()            {}

func exitOf(ps *os.ProcessState) (int, string) { return ps.ExitCode(), "" }
func signalName(sig os.Signal) string          { return sig.String() }
func killGroup(int) error                      { return errUnsupportedOS }
