//go:build unix

package runner

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Descriptors a shim inherits (exec.Cmd.ExtraFiles order).
const (
	configFD = 3 // the JIT config pipe
	readyFD  = 4 // the ready pipe
)

// passPipes hands the config and ready pipes to the shim cmd starts as descriptors 3 and 4.
func passPipes(cmd *exec.Cmd, config, ready *os.File) { cmd.ExtraFiles = []*os.File{config, ready} }

// inheritedPipes are the pipes passPipes handed this shim.
func inheritedPipes() (config, ready *os.File) {
	return os.NewFile(configFD, "jitconfig"), os.NewFile(readyFD, "ready")
}

// startDetached starts cmd (newSession already detached it).
func startDetached(cmd *exec.Cmd) (*exec.Cmd, error) { return cmd, cmd.Start() }

// listenStopAsk: the stop ask is a signal here, which catchSignals already delivers.
func listenStopAsk(Handle, chan<- os.Signal) (func(), error) { return func() {}, nil }

func isBrokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }

// killTree SIGKILLs the runner process shim.json identifies; its shim then kills what is left in
// the runner's process group (and cgroup) and records the exit.
func killTree(st ShimState) error {
	return signalIdentified(st.RunnerPID, st.RunnerStartTime, syscall.SIGKILL)
}

// runnerTree is the started run script and everything it starts: its process group, and its
// cgroup where the host has one (cg.V2 "" otherwise).
type runnerTree struct {
	cmd *exec.Cmd
	cg  cgroupPaths
}

// startRunner starts cmd as the runner: in its own process group, as the slot's user when the
// shim was given one, born inside its cgroup.
func startRunner(cmd *exec.Cmd, a shimArgs) (*runnerTree, error) {
	cmd.SysProcAttr = ownGroup()
	if a.uid >= 0 {
		// The runner's environment names its own user, never the daemon's; TMPDIR may be the
		// daemon's private directory. No supplementary groups: an empty list drops the shim's.
		for _, k := range []string{"HOME", "USER", "LOGNAME", "TMPDIR"} {
			cmd.Env = withoutVar(cmd.Env, k)
		}
		cmd.Env = append(cmd.Env, "HOME="+a.home, "USER="+a.user, "LOGNAME="+a.user)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(a.uid), Gid: uint32(a.gid), Groups: []uint32{}}
	}
	if err := startInCgroup(cmd, a.cgroup); err != nil {
		return nil, err
	}
	return &runnerTree{cmd: cmd, cg: a.cgroup}, nil
}

// askStop sends the runner SIGTERM.
func (t *runnerTree) askStop() (string, error) {
	return "SIGTERM", t.cmd.Process.Signal(syscall.SIGTERM)
}

// awaitExitAndSweep waits for the run script's exit and kills what is left in its process group.
// The unreaped zombie keeps the group id from being reused while it is signalled. The cgroup
// holds what left the group (setsid, double forks); the daemon still waits for it to empty
// before the slot's next job (Cgroups.Remove).
func (t *runnerTree) awaitExitAndSweep() {
	pid := t.cmd.Process.Pid
	if awaitExitKeepZombie(pid) == nil {
		_ = killGroup(pid)
		if t.cg.V2 != "" {
			_ = os.WriteFile(filepath.Join(t.cg.V2, "cgroup.kill"), []byte("1"), 0)
		}
	}
}

// oomKills reads the out-of-memory kills of the runner's cgroup: the cgroup outlives its
// processes until the daemon removes it, so its count is still there.
func (t *runnerTree) oomKills(log *slog.Logger) uint64 {
	if t.cg.V2 == "" {
		return 0
	}
	n, err := OOMKills(t.cg.V2, t.cg.V1)
	if err != nil {
		log.Error("read the runner's out-of-memory kills", "err", err)
	}
	return n
}

func (t *runnerTree) close() {}

// removeByPath: os.Root removes everywhere on Unix, so its error stands.
func removeByPath(_ string, cause error) error { return cause }
