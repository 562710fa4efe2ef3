//go:build unix

package daemonproc

import (
	"os"
	"syscall"
)

// group is a child's process group, named by the child's pid.
type group struct{ pgid int }

func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func joinGroup(p *os.Process) (group, error) { return group{pgid: p.Pid}, nil }

// kill SIGKILLs the group: the child and what it started, but not runners, whose shims left for
// sessions of their own.
func (g group) kill() {
	if g.pgid > 0 { // never -0: that is the caller's own group
		_ = syscall.Kill(-g.pgid, syscall.SIGKILL)
	}
}

func (g group) close() {}
