//go:build linux

package runner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// startInCgroup starts cmd with its process born inside the runner's cgroup p, so nothing it
// forks ever runs outside it, while the caller (the shim, which records the exit) stays where it
// is. v2: clone3 with CLONE_INTO_CGROUP (SysProcAttr.UseCgroupFD). v1 hierarchies of a hybrid
// host have no such flag: the forking thread joins the runner's v1 cgroups for the fork (a v1
// cgroup takes single threads through its tasks file) and goes back right after.
func startInCgroup(cmd *exec.Cmd, p cgroupPaths) error {
	if p.V2 == "" {
		return cmd.Start()
	}
	fd, err := unix.Open(p.V2, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open runner cgroup %s: %w", p.V2, err)
	}
	defer unix.Close(fd)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	if len(p.V1) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	tid := strconv.Itoa(unix.Gettid())
	back, err := threadV1Dirs()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	var moved []string
	restore := func() error {
		var errs []error
		for _, c := range moved {
			errs = append(errs, writeTasks(back[c], tid))
		}
		return errors.Join(errs...)
	}
	for c, dir := range p.V1 {
		if _, ok := back[c]; !ok {
			continue // this thread is in no hierarchy of c: nothing to join
		}
		if err = writeTasks(dir, tid); err != nil {
			break
		}
		moved = append(moved, c)
	}
	if err == nil {
		err = cmd.Start()
	}
	if rerr := restore(); rerr != nil {
		// The thread stays locked, so it ends with this goroutine instead of carrying the runner's
		// cgroups into other work of the shim.
		return errors.Join(err, fmt.Errorf("move the shim's thread back from the runner's v1 cgroups: %w", rerr))
	}
	runtime.UnlockOSThread()
	return err
}

func writeTasks(dir, tid string) error {
	if err := os.WriteFile(filepath.Join(dir, "tasks"), []byte(tid), 0); err != nil {
		return fmt.Errorf("move thread %s into cgroup %s: %w", tid, dir, err)
	}
	return nil
}

// threadV1Dirs is where the calling (locked) thread is in each v1 hierarchy runners join.
func threadV1Dirs() (map[string]string, error) {
	mi, self, err := readCgroupFiles("/proc/thread-self/cgroup")
	if err != nil {
		return nil, err
	}
	return v1Dirs(parseMountinfo(mi), parseProcCgroup(self)), nil
}
