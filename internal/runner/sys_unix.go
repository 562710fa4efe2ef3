//go:build unix

package runner

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

const supportedOS = true

// stopAsk is the daemon's request to a shim: "send your runner SIGTERM". A dedicated signal,
// because SIGTERM/SIGINT/SIGHUP reach the shim from service managers and terminals too.
const stopAsk = unix.SIGUSR1

// deafTo are the signals the shim receives and drops. They are caught, not ignored: an ignored
// signal stays ignored across exec, and the runner must still be able to act on SIGTERM.
var deafTo = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP}

// newSession detaches a child from the caller's session and process group.
func newSession() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// ownGroup puts the runner in its own process group, so a signal to the shim's group does not
// reach it either.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// closeInheritedOnExec marks every open descriptor above stderr close-on-exec, so nothing the
// daemon's own parent leaked to it (service managers and shells do) reaches a runner.
func closeInheritedOnExec() {
	fds, err := os.ReadDir("/dev/fd")
	if err != nil {
		unix.CloseOnExec(configFD)
		unix.CloseOnExec(readyFD)
		return
	}
	for _, e := range fds {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// exitOf turns a wait status into the exit record's code and signal name.
func exitOf(ps *os.ProcessState) (code int, signal string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, unix.SignalName(ws.Signal())
	}
	return ps.ExitCode(), ""
}

func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		return unix.SignalName(s)
	}
	return sig.String()
}

// killGroup SIGKILLs every process left in a process group.
func killGroup(pgid int) error { return unix.Kill(-pgid, unix.SIGKILL) }
