//go:build linux

package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroups is this daemon's runner cgroups (docs/runner-processes.md, "cgroups"): one per runner,
// named by attempt id, created before the runner starts and killed whole when it ends.
type Cgroups struct {
	layout cgroupLayout
	// V1Missing says, per v1 controller of a hybrid host, why runners do not join it.
	V1Missing map[string]string
}

// DetectCgroups finds the cgroup v2 hierarchy this process can reach (wherever it is mounted:
// /sys/fs/cgroup on a pure v2 host, /sys/fs/cgroup/unified on a hybrid one), makes the runners'
// directory below the daemon's own cgroup, and checks cgroup.kill works there. On pure v2 with
// the daemon in a cgroup of its own (a systemd unit with Delegate=yes) it first moves itself into
// the leaf <own>/daemon. An error says why no cgroup is usable: the daemon then falls back to
// killing by uid (KillUID).
func DetectCgroups() (*Cgroups, error) {
	mi, self, err := readCgroupFiles("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	return setUpCgroups(mi, self, isCgroup2, os.Getpid())
}

// readCgroupFiles reads this process's mountinfo and the cgroup file named (a process's or a
// thread's).
func readCgroupFiles(cgroupFile string) (mountinfo, cgroups []byte, err error) {
	if mountinfo, err = os.ReadFile("/proc/self/mountinfo"); err != nil {
		return nil, nil, fmt.Errorf("read /proc/self/mountinfo: %w", err)
	}
	if cgroups, err = os.ReadFile(cgroupFile); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", cgroupFile, err)
	}
	return mountinfo, cgroups, nil
}

// setUpCgroups is DetectCgroups on given /proc/self/mountinfo and /proc/self/cgroup contents, for
// process pid: TestSetUpCgroups runs it against a fake cgroupfs root.
func setUpCgroups(mi, self []byte, isCgroup2 func(string) bool, pid int) (*Cgroups, error) {
	l, err := newCgroupLayout(mi, self, isCgroup2)
	if err != nil {
		return nil, err
	}
	c := &Cgroups{layout: l}
	if l.Leaf != "" && len(l.V1Runners) == 0 {
		if err := enterLeaf(l.Leaf, pid); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(l.Runners, 0o755); err != nil {
		return nil, fmt.Errorf("create the runners' cgroup %s (under systemd the unit needs Delegate=yes): %w", l.Runners, err)
	}
	if _, err := os.Stat(filepath.Join(l.Runners, "cgroup.kill")); err != nil {
		return nil, fmt.Errorf("cgroup %s has no cgroup.kill (Linux 5.14 or later has it): %w", l.Runners, err)
	}
	for ctrl, dir := range l.V1Runners {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			c.V1Missing = setReason(c.V1Missing, ctrl, err.Error())
			delete(c.layout.V1Runners, ctrl)
		}
	}
	return c, nil
}

func setReason(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// enterLeaf moves the whole daemon (pid) into leaf, so its own cgroup holds only child cgroups.
func enterLeaf(leaf string, pid int) error {
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		return fmt.Errorf("create the daemon's leaf cgroup %s (under systemd the unit needs Delegate=yes): %w", leaf, err)
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("move the daemon into its leaf cgroup %s: %w", leaf, err)
	}
	return nil
}

func isCgroup2(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// Root is the directory holding the runners' v2 cgroups (status and logs name it).
func (c *Cgroups) Root() string { return c.layout.Runners }

// create makes attempt id's cgroup: its v2 directory and, on a hybrid host, its v1 ones. An
// existing one is reused (recovery may repeat a start that a crash cut short).
func (c *Cgroups) create(id string) (cgroupPaths, error) {
	p := c.layout.paths(id)
	if err := os.Mkdir(p.V2, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return p, fmt.Errorf("create runner cgroup %s: %w", p.V2, err)
	}
	for _, dir := range p.V1 {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return p, fmt.Errorf("create runner cgroup %s: %w", dir, err)
		}
	}
	return p, nil
}

// List is the names (attempt ids) of the runner cgroups that exist.
func (c *Cgroups) List() ([]string, error) {
	entries, err := os.ReadDir(c.layout.Runners)
	if err != nil {
		return nil, fmt.Errorf("list runner cgroups in %s: %w", c.layout.Runners, err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && keyPart.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Remove kills every process in attempt id's cgroup, waits until it is empty, and removes it
// (v2 and v1 directories). A cgroup that does not exist is already removed.
func (c *Cgroups) Remove(ctx context.Context, id string) error {
	if !keyPart.MatchString(id) {
		return fmt.Errorf("remove runner cgroup: %q is not an attempt id", id)
	}
	p := c.layout.paths(id)
	if err := killCgroup(ctx, p.V2); err != nil {
		return err
	}
	var errs []error
	for _, dir := range append([]string{p.V2}, mapValues(p.V1)...) {
		if err := rmdirRetry(ctx, dir); err != nil {
			errs = append(errs, fmt.Errorf("remove runner cgroup %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// killPolls bounds how often killCgroup looks at a cgroup after cgroup.kill (about 10 s).
const killPolls = 400

// killCgroup writes cgroup.kill (SIGKILL to every process in dir and its descendants, which the
// kernel does atomically with respect to fork) and waits until cgroup.events says populated 0.
func killCgroup(ctx context.Context, dir string) error {
	err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("kill runner cgroup %s: %w", dir, err)
	}
	delay := time.Millisecond
	for range killPolls {
		populated, err := cgroupPopulated(dir)
		if err != nil || !populated {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kill runner cgroup %s: processes remain: %w", dir, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 25*time.Millisecond)
	}
	return fmt.Errorf("kill runner cgroup %s: processes remain after cgroup.kill; look at %s/cgroup.procs", dir, dir)
}

// cgroupPopulated reads "populated" from dir's cgroup.events: 1 while any process lives in dir
// or below it.
func cgroupPopulated(dir string) (bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s/cgroup.events: %w", dir, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v) != "0", nil
		}
	}
	return false, fmt.Errorf("%s/cgroup.events has no populated line", dir)
}

// rmdirRetry removes an empty cgroup directory. The kernel may answer EBUSY for a moment after
// the last process left (a v1 hierarchy releases its css lazily).
func rmdirRetry(ctx context.Context, dir string) error {
	for i := 0; ; i++ {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || i >= 50 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Path is the v2 cgroup directory of attempt id's runner.
func (c *Cgroups) Path(id string) string { return c.layout.paths(id).V2 }

// RunnerCgroupPath is where a daemon in this process's cgroup puts attempt id's v2 cgroup (as
// DetectCgroups lays it out), computed without creating or moving anything: for tests and tools
// that look for a runner's cgroup from beside the daemon.
func RunnerCgroupPath(id string) (string, error) {
	l, err := currentLayout()
	if err != nil {
		return "", err
	}
	return l.paths(id).V2, nil
}

// RemoveRunnerCgroup kills and removes attempt id's runner cgroup where a daemon in this process's
// cgroup puts it, creating or moving nothing: for tests and tools cleaning up after a daemon that
// is gone (the harness, after a test killed its daemon). A missing cgroup is already removed.
func RemoveRunnerCgroup(ctx context.Context, id string) error {
	l, err := currentLayout()
	if err != nil {
		return err
	}
	return (&Cgroups{layout: l}).Remove(ctx, id)
}

func currentLayout() (cgroupLayout, error) {
	mi, self, err := readCgroupFiles("/proc/self/cgroup")
	if err != nil {
		return cgroupLayout{}, err
	}
	return newCgroupLayout(mi, self, isCgroup2)
}
