//go:build linux

package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Cgroup2 is the cgroup check until the runner package's own detection is wired: the cgroup v2
// hierarchy at /sys/fs/cgroup (pure v2) or /sys/fs/cgroup/unified (hybrid), and cgroup.kill in
// this process's cgroup there. It only reads: the daemon's start creates directories and moves itself.
func Cgroup2() (string, error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	own := "/"
	for _, line := range strings.Split(string(self), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	for _, mnt := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(mnt, &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
			continue
		}
		dir := filepath.Join(mnt, own)
		if own == "/" { // the root cgroup has no cgroup.kill; the runners' cgroups below it do
			return dir, nil
		}
		if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
			return "", fmt.Errorf("%s has no cgroup.kill (Linux 5.14 or later has it)", dir)
		}
		return dir, nil
	}
	return "", fmt.Errorf("no cgroup2 filesystem at /sys/fs/cgroup or /sys/fs/cgroup/unified")
}
