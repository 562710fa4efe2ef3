//go:build darwin

package runner

import (
	"context"
	"fmt"
	"os/exec"
	"slices"

	"golang.org/x/sys/unix"
)

// darwinHomes is where slot users' homes are made on macOS: in the runners directory of the
// default state_dir (runner.RuntimeRootFor), fixed as Linux's /home is, since the users outlive
// any one config. Not /Users: these are service accounts, not people.
const darwinHomes = "/var/lib/runner-manager-runners/users"

// osAccounts is dscl (users_dscl.go, where its command lines are built and tested); this file
// only runs it.
func osAccounts() accountDB {
	return &dscl{run: runDscl, homes: darwinHomes, first: dsclFirstID, last: dsclLastID}
}

func runDscl(ctx context.Context, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, "/usr/bin/dscl", args...).CombinedOutput()
}

// pidsOf lists the live (not zombie) processes with uid among their real, effective and saved
// uids, from sysctl kern.proc.all. kern.proc.uid alone would match the effective uid only, and
// miss a set-uid program a job ran.
func pidsOf(uid uint32) ([]int, error) {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("list processes (sysctl kern.proc.all): %w", err)
	}
	var pids []int
	for _, p := range procs {
		cred := p.Eproc.Pcred
		if p.Proc.P_stat != szomb && slices.Contains([]uint32{p.Eproc.Ucred.Uid, cred.P_ruid, cred.P_svuid}, uid) {
			pids = append(pids, int(p.Proc.P_pid))
		}
	}
	return pids, nil
}
