//go:build linux

package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

// forkChain is what issue 26 saw outrun slot hygiene: a process in a session of its own that
// forks its successor and exits every 2 ms, so no pid lives long enough for a scan to kill it.
// $1 is a marker every generation carries in its command line.
const forkChain = `sleep 0.002; sh -c "$0" "$0" "$1" &`

// startForkChain starts a chain marked marker with attr (credentials, cgroup) and returns once its
// first generation is gone, so only descendants carry it on.
func startForkChain(t *testing.T, marker string, attr *syscall.SysProcAttr, p cgroupPaths) {
	t.Helper()
	cmd := exec.Command("setsid", "sh", "-c", forkChain, forkChain, marker)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = attr
	if err := startInCgroup(cmd, p); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the fork chain's first generation: %v", err)
	}
}

// marked lists the live processes whose command line holds marker.
func marked(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmdline, []byte(marker)) {
			if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// staysGone fails t if any of 200 consecutive scans finds a process of the chain: a live chain
// shows a generation in nearly every scan.
func staysGone(t *testing.T, what string, scan func() []int) {
	t.Helper()
	for i := range 200 {
		if pids := scan(); len(pids) > 0 {
			t.Fatalf("%s: scan %d still finds %v", what, i, pids)
		}
	}
}

// testCgroups is DetectCgroups; a host where it finds nothing usable fails the test with why.
func testCgroups(t *testing.T) *Cgroups {
	t.Helper()
	livetest.Root(t, "creating cgroups")
	c, err := DetectCgroups()
	if err != nil {
		t.Fatalf("this test needs a usable cgroup v2 hierarchy (Linux 5.14+, mounted, writable by root): %v", err)
	}
	return c
}

// testCgroup creates the runner cgroup rmtest<pid>-<name> in c, removed when the test ends, and
// returns its id and paths.
func testCgroup(t *testing.T, c *Cgroups, name string) (string, cgroupPaths) {
	t.Helper()
	id := fmt.Sprintf("rmtest%d-%s", os.Getpid(), name)
	p, err := c.create(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Remove(context.Background(), id) })
	return id, p
}

func TestKillUIDEndsAForkChain(t *testing.T) {
	u := testUser(t, testSlotUsers(t), 7)
	cred := &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
	t.Cleanup(func() {
		// Whatever killUID did, no chain outlives the test (nor blocks userdel).
		for range 20 {
			cmd := exec.Command("/bin/sh", "-c", "kill -KILL -1")
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			_ = cmd.Run()
		}
	})
	startForkChain(t, "chain-"+u.Name, &syscall.SysProcAttr{Credential: cred}, cgroupPaths{})
	livetest.Eventually(t, "the fork chain", func() bool { pids, _ := pidsOf(u.UID); return len(pids) > 0 })
	if err := killUID(context.Background(), u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
	staysGone(t, "after killUID", func() []int { pids, _ := pidsOf(u.UID); return pids })
}

func TestCgroupRemoveKillsAForkChainAndWaitsUntilEmpty(t *testing.T) {
	c := testCgroups(t)
	id, p := testCgroup(t, c, "chain")
	marker := "chain-" + id
	startForkChain(t, marker, nil, p)
	livetest.Eventually(t, "the fork chain in its cgroup", func() bool { ok, _ := cgroupPopulated(p.V2); return ok && len(marked(marker)) > 0 })
	for _, pid := range marked(marker) {
		if got := cgroupOf(t, pid); got != p.V2 {
			t.Errorf("chain process %d is in cgroup %s, want %s", pid, got, p.V2)
		}
	}
	if err := c.Remove(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	staysGone(t, "after Remove", func() []int { return marked(marker) })
	for _, dir := range append([]string{p.V2}, mapValues(p.V1)...) {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("runner cgroup %s is still there after Remove (%v)", dir, err)
		}
	}
	names, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n == id {
			t.Errorf("List still names %s after Remove", id)
		}
	}
	if err := c.Remove(context.Background(), id); err != nil {
		t.Errorf("a second Remove (recovery repeats it): %v", err)
	}
}

// TestStartInCgroupLeavesTheCallerOutside: the runner is born in its cgroup, v2 and (on a hybrid
// host) v1, while the shim that starts it stays where it was.
func TestStartInCgroupLeavesTheCallerOutside(t *testing.T) {
	c := testCgroups(t)
	id, p := testCgroup(t, c, "place")
	before, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("cat", "/proc/self/cgroup")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := startInCgroup(cmd, p); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	got := parseProcCgroup(out.Bytes())
	if want := "/" + filepath.Base(filepath.Dir(p.V2)) + "/" + id; !strings.HasSuffix(got.V2, want) {
		t.Errorf("the child's v2 cgroup is %q, want one ending in %q", got.V2, want)
	}
	for ctrl, dir := range p.V1 {
		if !strings.HasSuffix(dir, got.V1[ctrl]) || got.V1[ctrl] == "/" {
			t.Errorf("the child's %s cgroup is %q, want %s", ctrl, got.V1[ctrl], dir)
		}
	}
	for _, f := range []string{"/proc/self/cgroup", "/proc/thread-self/cgroup"} {
		after, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Errorf("the caller's %s changed:\n%s\nwas\n%s", f, after, before)
		}
	}
}

// cgroupOf is the v2 directory process pid is in, as a path below the v2 mount of c's layout.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "" // exited meanwhile
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	own := parseProcCgroup(data)
	for _, m := range parseMountinfo(mi) {
		if m.V2 && isCgroup2(m.Point) {
			if d, ok := within(m, own.V2); ok {
				return d
			}
		}
	}
	return ""
}

// TestSetUpCgroups runs the start-up of the runners' cgroups against a fake cgroupfs root: on pure
// v2 a daemon in a cgroup of its own moves into <own>/daemon and makes <own>/runners; on a hybrid
// host it moves nowhere and makes the v1 directories too; a kernel without cgroup.kill is refused.
func TestSetUpCgroups(t *testing.T) {
	all := func(string) bool { return true }
	for _, tc := range []struct {
		name      string
		mounts    func(root string) string
		self      string
		kill      bool // the fake kernel has cgroup.kill in the runners' directory
		wantLeaf  string
		wantDirs  []string
		wantError string
	}{
		{name: "pure v2 under systemd", self: "0::/system.slice/rm.service\n", kill: true,
			mounts:   func(r string) string { return "25 20 0:22 / " + r + " rw - cgroup2 cgroup2 rw\n" },
			wantLeaf: "system.slice/rm.service/daemon", wantDirs: []string{"system.slice/rm.service/runners"}},
		{name: "hybrid: no move, v1 directories made", self: "4:memory:/ctr\n8:pids:/\n0::/\n", kill: true,
			mounts: func(r string) string {
				return "40 30 0:37 / " + r + "/unified rw - cgroup2 cgroup2 rw\n34 30 0:31 / " + r + "/memory rw - cgroup cgroup rw,memory\n38 30 0:35 / " + r + "/pids rw - cgroup cgroup rw,pids\n"
			},
			wantDirs: []string{"unified/runner-manager/runners", "memory/ctr/runners", "pids/runner-manager/runners"}},
		{name: "a kernel without cgroup.kill", self: "0::/\n", kill: false,
			mounts:    func(r string) string { return "25 20 0:22 / " + r + " rw - cgroup2 cgroup2 rw\n" },
			wantError: "has no cgroup.kill"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			mi := tc.mounts(root)
			l, err := newCgroupLayout([]byte(mi), []byte(tc.self), all)
			if err != nil {
				t.Fatal(err)
			}
			if tc.kill { // a real cgroupfs fills every new directory; the fake one has what the test puts there
				if err := os.MkdirAll(l.Runners, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(l.Runners, "cgroup.kill"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c, err := setUpCgroups([]byte(mi), []byte(tc.self), all, 4242)
			if wantedError(t, "setUpCgroups", err, tc.wantError) {
				return
			}
			for _, d := range tc.wantDirs {
				if info, err := os.Stat(filepath.Join(root, d)); err != nil || !info.IsDir() {
					t.Errorf("%s was not made: %v", d, err)
				}
			}
			procs, err := os.ReadFile(filepath.Join(root, tc.wantLeaf, "cgroup.procs"))
			switch {
			case tc.wantLeaf == "" && err == nil:
				t.Errorf("the daemon moved into %s, want it to stay", filepath.Join(tc.wantLeaf, "cgroup.procs"))
			case tc.wantLeaf != "" && string(procs) != "4242":
				t.Errorf("%s/cgroup.procs = %q (%v), want the daemon's pid 4242", tc.wantLeaf, procs, err)
			}
			if got := c.Path("h1-7"); got != filepath.Join(root, tc.wantDirs[0], "h1-7") {
				t.Errorf("Path = %s, want below %s", got, tc.wantDirs[0])
			}
		})
	}
}
