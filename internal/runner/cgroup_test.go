package runner

import (
	"reflect"
	"strings"
	"testing"
)

// wantedError fails t unless err is what a table row wants: no error when want is "", else an
// error containing want. It reports whether the row wanted an error, which leaves nothing more
// to check.
func wantedError(t *testing.T, call string, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("%s: %v", call, err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s = %v, want an error containing %q", call, err, want)
	}
	return true
}

// Mount tables of the hosts the daemon meets: a hybrid host without systemd (the CI hosts),
// a pure v2 host under systemd, and a container whose cgroup namespace shows a subtree.
const (
	hybridMounts = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	hybridSelf = `9:name=systemd:/
8:pids:/
4:memory:/process_api/3bac
1:cpu,cpuacct:/
0::/
`
	pureMounts = `25 20 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
26 20 0:23 / /proc rw - proc proc rw
`
	pureSelf = "0::/system.slice/runner-manager.service\n"
)

func TestCgroupLayout(t *testing.T) {
	all := func(string) bool { return true }
	for _, tc := range []struct {
		name         string
		mounts, self string
		isCgroup2    func(string) bool
		want         cgroupLayout
		err          string
	}{
		{name: "hybrid host, daemon in the root cgroup", mounts: hybridMounts, self: hybridSelf, isCgroup2: all, want: cgroupLayout{
			Runners: "/sys/fs/cgroup/unified/runner-manager/runners",
			V1Runners: map[string]string{
				"cpu":    "/sys/fs/cgroup/cpu,cpuacct/runner-manager/runners",
				"memory": "/sys/fs/cgroup/memory/process_api/3bac/runners",
				"pids":   "/sys/fs/cgroup/pids/runner-manager/runners",
			}}},
		{name: "pure v2 under systemd: runners beside the daemon's leaf", mounts: pureMounts, self: pureSelf, isCgroup2: all, want: cgroupLayout{
			Runners: "/sys/fs/cgroup/system.slice/runner-manager.service/runners",
			Leaf:    "/sys/fs/cgroup/system.slice/runner-manager.service/daemon"}},
		{name: "a daemon already in its leaf (an upgrade re-executed it) keeps the same runners", mounts: pureMounts,
			self: "0::/system.slice/runner-manager.service/daemon\n", isCgroup2: all, want: cgroupLayout{
				Runners: "/sys/fs/cgroup/system.slice/runner-manager.service/runners",
				Leaf:    "/sys/fs/cgroup/system.slice/runner-manager.service/daemon"}},
		{name: "cgroup namespace: the mount shows a subtree", mounts: "1 0 0:1 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			self: "0::/kubepods/pod1/ctr\n", isCgroup2: all, want: cgroupLayout{
				Runners: "/sys/fs/cgroup/ctr/runners", Leaf: "/sys/fs/cgroup/ctr/daemon"}},
		{name: "a mount of another subtree does not hold the daemon's cgroup", mounts: "1 0 0:1 /other /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			self: "0::/kubepods/pod1\n", isCgroup2: all, err: "no cgroup2 filesystem is mounted"},
		{name: "v2 hidden under another mount (a tmpfs over /sys/fs/cgroup)", mounts: hybridMounts, self: hybridSelf,
			isCgroup2: func(string) bool { return false }, err: "no cgroup2 filesystem is mounted"},
		{name: "no cgroup mounted at all", mounts: "26 20 0:23 / /proc rw - proc proc rw\n", self: hybridSelf, isCgroup2: all,
			err: "no cgroup2 filesystem is mounted"},
		{name: "a kernel with v1 only", mounts: hybridMounts, self: "4:memory:/\n", isCgroup2: all, err: "no cgroup v2 entry"},
		{name: "escaped mount point", mounts: `40 30 0:37 / /mnt/cg\040two rw - cgroup2 cgroup2 rw` + "\n", self: "0::/\n", isCgroup2: all,
			want: cgroupLayout{Runners: "/mnt/cg two/runner-manager/runners"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newCgroupLayout([]byte(tc.mounts), []byte(tc.self), tc.isCgroup2)
			if wantedError(t, "newCgroupLayout", err, tc.err) {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("layout = %+v\nwant     %+v", got, tc.want)
			}
		})
	}
}

func TestCgroupPathsOfAnAttempt(t *testing.T) {
	l := cgroupLayout{Runners: "/cg/unified/runner-manager/runners", V1Runners: map[string]string{"memory": "/cg/memory/runners"}}
	want := cgroupPaths{V2: "/cg/unified/runner-manager/runners/h1-0000000007", V1: map[string]string{"memory": "/cg/memory/runners/h1-0000000007"}}
	if got := l.paths("h1-0000000007"); !reflect.DeepEqual(got, want) {
		t.Errorf("paths = %+v, want %+v", got, want)
	}
	if got := (cgroupLayout{Runners: "/r"}).paths("a"); got.V1 != nil {
		t.Errorf("pure v2 paths have v1 directories: %+v", got)
	}
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add([]byte(hybridMounts))
	f.Add([]byte(pureMounts))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range parseMountinfo(data) {
			if m.V2 && len(m.Controllers) > 0 {
				t.Fatalf("a cgroup2 mount with v1 controllers: %+v", m)
			}
		}
		_ = parseProcCgroup(data)
	})
}
