//go:build linux

package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// killUID SIGKILLs every process whose real, effective or saved uid is uid, rescanning until none
// is left (a process may fork while the scan runs).
func killUID(ctx context.Context, uid uint32) error {
	for round := 0; round < 100; round++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		pids, err := pidsOf(uid)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	return fmt.Errorf("processes of uid %d keep appearing after 100 rounds of SIGKILL", uid)
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
