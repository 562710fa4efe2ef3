package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/runner-manager/runner-manager/internal/runner"
)

// Cgroup2 is the cgroup check: the runner package's own layout (runner.RunnerCgroupPath: the
// cgroup v2 hierarchy this process reaches, on a pure v2 or a hybrid host) and cgroup.kill there
// (killable). It only reads: the daemon's start creates the runners' directory and moves itself,
// so the path is where a daemon in doctor's own cgroup would put them; `runner-manager status`
// shows the running daemon's.
func Cgroup2() (string, error) {
	p, err := runner.RunnerCgroupPath("doctor")
	if err != nil {
		return "", err
	}
	return killable(filepath.Dir(p))
}

// killable finds the nearest existing cgroup at or above dir (the runners' directory may not
// exist yet) and checks it has cgroup.kill (Linux 5.14 or later), as every cgroup but a
// hierarchy's root (which has no cgroup.type either) does on such a kernel.
func killable(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		_, err := os.Stat(filepath.Join(d, "cgroup.procs"))
		switch {
		case errors.Is(err, fs.ErrNotExist) && d != filepath.Dir(d):
			continue
		case err != nil:
			return "", fmt.Errorf("no cgroup at or above %s: %w", dir, err)
		}
		if _, err := os.Stat(filepath.Join(d, "cgroup.kill")); err == nil {
			return d, nil
		}
		if _, err := os.Stat(filepath.Join(d, "cgroup.type")); errors.Is(err, fs.ErrNotExist) {
			return d, nil // a hierarchy's root: no cgroup.kill of its own, the cgroups below have it
		}
		return "", fmt.Errorf("cgroup %s has no cgroup.kill (Linux 5.14 or later has it)", d)
	}
}
