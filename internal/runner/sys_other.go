//go:build !unix && !windows

package runner

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// Runner processes need a way to detach, contain and stop a process tree; on systems other than
// Unix and Windows, Start and RunShim refuse.
const supportedOS = false

const stopAsk = syscall.Signal(0x1e)

var deafTo []os.Signal

func newSession() *syscall.SysProcAttr                         { return nil }
func closeInheritedOnExec()                                    {}
func exitOf(ps *os.ProcessState) (int, string)                 { return ps.ExitCode(), "" }
func signalName(sig os.Signal) string                          { return sig.String() }
func passPipes(*exec.Cmd, *os.File, *os.File)                  {}
func inheritedPipes() (config, ready *os.File)                 { return nil, nil }
func startDetached(cmd *exec.Cmd) (*exec.Cmd, error)           { return cmd, errUnsupportedOS }
func listenStopAsk(Handle, chan<- os.Signal) (func(), error)   { return nil, errUnsupportedOS }
func isBrokenPipe(error) bool                                  { return false }
func killTree(ShimState) error                                 { return errUnsupportedOS }
func startRunner(*exec.Cmd, shimArgs) (*runnerTree, error)     { return nil, errUnsupportedOS }
func readProcInfo(pid int) (procInfo, error)                   { return procInfo{}, unsupported(pid) }
func signalVerified(pid int, _ uint64, _ syscall.Signal) error { return unsupported(pid) }

func unsupported(pid int) error {
	return fmt.Errorf("pid %d on %s: %w", pid, runtime.GOOS, errUnsupportedOS)
}

type runnerTree struct{ cmd *exec.Cmd }

func (t *runnerTree) askStop() (string, error)     { return "", errUnsupportedOS }
func (t *runnerTree) awaitExitAndSweep()           {}
func (t *runnerTree) oomKills(*slog.Logger) uint64 { return 0 }
func (t *runnerTree) close()                       {}

func removeByPath(_ string, cause error) error { return cause }
