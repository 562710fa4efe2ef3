//go:build windows

package runner

import (
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

const supportedOS = true

// stopAsk stands for the daemon's stop request inside the shim. Windows has no signal for it: the
// daemon sets the shim's stop event (stopEventName), which listenStopAsk turns into this value.
const stopAsk = syscall.Signal(0x1e)

// deafTo: Ctrl-C and Ctrl-Break reach the shim only while it is attached to its runner's console
// (askStop); were it not caught, Go's default would end the shim.
var deafTo = []os.Signal{os.Interrupt}

// newSession detaches the shim from the daemon: no console, a process group of its own, and out
// of the daemon's job object (a service manager's or a terminal's) where that job allows it
// (startDetached retries without), so ending the daemon's job does not end runners.
func newSession() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS | windows.CREATE_BREAKAWAY_FROM_JOB,
		HideWindow:    true,
	}
}

// closeInheritedOnExec has nothing to do: Go passes a child only the handles it lists.
func closeInheritedOnExec() {}

// treeKilledCode is the exit code of every process of a runner's job when the job is terminated
// (Kill, or a stop the runner could not be asked for): 128+9, a shell's "killed by SIGKILL".
const treeKilledCode = 137

// exitOf turns the runner's exit into the exit record's code and "signal": a terminated job is
// reported as a kill, like SIGKILL on Unix.
func exitOf(ps *os.ProcessState) (code int, signal string) {
	if ps.ExitCode() == treeKilledCode {
		return -1, "job terminated"
	}
	return ps.ExitCode(), ""
}

func signalName(sig os.Signal) string { return sig.String() }
