//go:build linux

package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// killRounds bounds killUID: each round is one kill(-1) by the helper and one /proc scan.
const killRounds = 50

// killShell runs the helper: the POSIX shell's kill builtin sends kill(-1, SIGKILL) for
// "-KILL -1" (dash, bash and busybox alike), with no other program needed on the host.
const killShell = "/bin/sh"

// killUID ends every process of uid, the fallback of a host without usable cgroups. A helper
// dropped to uid (and gid) runs kill(-1, SIGKILL): as uid, kill(-1) reaches exactly the processes
// uid may signal, all of uid's and nobody else's, and the kernel sends it under the task list
// lock, so a chain that forks and exits every few milliseconds cannot outrun it the way it
// outruns a /proc scan followed by kill(pid). kill(-1) spares its caller, which exits by itself.
// The helper runs, then a /proc scan looks for what is left, until one finds no process of uid
// (at most killRounds times).
func killUID(ctx context.Context, uid, gid uint32) error {
	if uid == 0 {
		return errors.New("refusing to kill every process of uid 0")
	}
	var last error
	for round := 0; round < killRounds; round++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Kill first, then look: a scan can miss a fork chain between two generations (the hole
		// this replaces), while after kill(-1) nothing of the uid is left to be missed.
		cmd := exec.CommandContext(ctx, killShell, "-c", "kill -KILL -1")
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
		// Its exit status says nothing useful: the scan decides. It may fail to start when uid is at
		// its process limit (a fork bomb): the next round tries again.
		if err := cmd.Run(); err != nil && !errors.As(err, new(*exec.ExitError)) {
			last = fmt.Errorf("run %s as uid %d to end its processes: %w", killShell, uid, err)
			continue
		}
		pids, err := pidsOf(uid)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
	}
	return errors.Join(fmt.Errorf("processes of uid %d keep appearing after %d rounds of kill(-1, SIGKILL) as that uid", uid, killRounds), last)
}

// pidsOf lists the live (not zombie) processes with uid among their real, effective and saved uids.
func pidsOf(uid uint32) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	want := []byte(strconv.FormatUint(uint64(uid), 10))
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue // gone meanwhile
		}
		var zombie, match bool
		for _, line := range bytes.Split(data, []byte("\n")) {
			switch {
			case bytes.HasPrefix(line, []byte("State:")):
				zombie = bytes.Contains(line, []byte("(zombie)"))
			case bytes.HasPrefix(line, []byte("Uid:")):
				f := bytes.Fields(line[4:])
				for i := 0; i < len(f) && i < 3; i++ {
					match = match || bytes.Equal(f[i], want)
				}
			}
		}
		if match && !zombie {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
