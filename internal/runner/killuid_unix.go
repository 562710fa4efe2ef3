//go:build linux || darwin

package runner

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

// killShell runs the helper: the POSIX shell's kill builtin sends kill(-1, SIGKILL) for
// "-KILL -1" (dash, bash and busybox alike, and macOS's /bin/sh), with no other program needed.
const killShell = "/bin/sh"

// killUID ends every process of uid, the fallback of a host without usable cgroups (and the only
// way on macOS). A helper dropped to uid (and gid) runs kill(-1, SIGKILL): as uid, kill(-1)
// reaches exactly the processes uid may signal, all of uid's and nobody else's, and the kernel
// sends it in one pass over its process list, so a chain that forks and exits every few
// milliseconds cannot outrun it the way it outruns a scan followed by kill(pid). kill(-1) spares
// its caller, which exits by itself. pidsOf (/proc on Linux, sysctl kern.proc on macOS) then
// looks for what is left, until it finds nothing (killUntilGone).
func killUID(ctx context.Context, uid, gid uint32) error {
	return killUntilGone(ctx, uid, killRounds, func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, killShell, "-c", "kill -KILL -1")
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
		// Its exit status says nothing useful: the scan decides.
		if err := cmd.Run(); err != nil && !errors.As(err, new(*exec.ExitError)) {
			return fmt.Errorf("run %s as uid %d to end its processes: %w", killShell, uid, err)
		}
		return nil
	}, func() ([]int, error) { return pidsOf(uid) })
}
