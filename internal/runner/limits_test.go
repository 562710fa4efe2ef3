package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeCgroup makes dir with the named files empty, as a cgroup directory lists its interface files.
func fakeCgroup(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeV2 makes a runner's v2 cgroup <own>/runners/<id> holding files; its controllers (and its
// parents') are those whose files it has, as after delegation.
func fakeV2(t *testing.T, files ...string) string {
	t.Helper()
	own := t.TempDir()
	dir := filepath.Join(own, "runners", "a1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var ctrls []string
	for _, f := range files {
		if c, _, ok := strings.Cut(f, "."); ok && c != "cgroup" && !slices.Contains(ctrls, c) {
			ctrls = append(ctrls, c)
		}
		writeFile(t, filepath.Join(dir, f), "")
	}
	for _, d := range []string{own, filepath.Dir(dir), dir} {
		writeFile(t, filepath.Join(d, "cgroup.controllers"), strings.Join(ctrls, " "))
	}
	return dir
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A pure v2 host whose daemon cgroup has the controllers (Delegate=yes) and whose runners'
// directory does not pass them down yet: applyLimits enables them in the daemon's cgroup and the
// runners' directory, never above.
func TestDelegateEnablesControllersBelowTheDaemon(t *testing.T) {
	above := t.TempDir()
	own := filepath.Join(above, "own")
	dir := filepath.Join(own, "runners", "a1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(above, "cgroup.controllers"), "cpu memory pids")
	writeFile(t, filepath.Join(own, "cgroup.controllers"), "cpu memory pids")
	writeFile(t, filepath.Join(own, "runners", "cgroup.controllers"), "")
	writeFile(t, filepath.Join(dir, "cgroup.controllers"), "")
	if delegate(dir, "memory") {
		t.Fatal("delegate reports memory available where the fake cgroupfs did not make it so")
	}
	if b, _ := os.ReadFile(filepath.Join(own, "cgroup.subtree_control")); string(b) != "+memory" {
		t.Errorf("the daemon's cgroup.subtree_control = %q, want +memory", b)
	}
	if _, err := os.Stat(filepath.Join(above, "cgroup.subtree_control")); err == nil {
		t.Error("delegate wrote above the daemon's own cgroup")
	}
	// The runners' directory had no memory to pass down in this fake (the kernel would have
	// added it once the daemon's cgroup enabled it), so nothing was written there.
	if _, err := os.Stat(filepath.Join(own, "runners", "cgroup.subtree_control")); err == nil {
		t.Error("delegate enabled a controller the runners' directory does not have")
	}
}

func readFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && e.Name() != "cgroup.controllers" {
			out[e.Name()] = string(b)
		}
	}
	return out
}

// TestApplyLimits writes limits into fake cgroupfs directories laid out as a v2 host with
// controllers, a hybrid host (an empty v2 beside v1 controllers, like the CI hosts) and a v1 host.
func TestApplyLimits(t *testing.T) {
	v2Files := []string{"cgroup.procs", "cgroup.kill", "memory.max", "memory.swap.max", "memory.events", "pids.max", "cpu.max"}
	all := Limits{MemoryMax: 512 << 20, CPUs: 1.5, PidsMax: 256}
	for _, tc := range []struct {
		name   string
		v2     []string // files of the v2 directory; nil: none
		v1     map[string][]string
		limits Limits
		want   map[string]map[string]string // dir ("v2" or a v1 controller) -> file -> content
		err    string
	}{
		{"v2 with controllers", v2Files, nil, all, map[string]map[string]string{
			"v2": {"memory.max": "536870912", "memory.swap.max": "0", "pids.max": "256", "cpu.max": "150000 100000"}}, ""},
		{"v2 without swap accounting", []string{"cgroup.procs", "memory.max", "pids.max", "cpu.max"}, nil, Limits{MemoryMax: 64 << 20}, map[string]map[string]string{
			"v2": {"memory.max": "67108864"}}, ""},
		{"hybrid: empty v2, v1 controllers", []string{"cgroup.procs", "cgroup.kill", "memory.pressure"}, map[string][]string{
			"memory": {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.oom_control"},
			"pids":   {"pids.max"},
			"cpu":    {"cpu.cfs_period_us", "cpu.cfs_quota_us"},
		}, all, map[string]map[string]string{
			"v2":     {},
			"memory": {"memory.limit_in_bytes": "536870912", "memory.memsw.limit_in_bytes": "536870912"},
			"pids":   {"pids.max": "256"},
			"cpu":    {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "150000"},
		}, ""},
		{"v1 without swap accounting", nil, map[string][]string{"memory": {"memory.limit_in_bytes"}}, Limits{MemoryMax: 1 << 30}, map[string]map[string]string{
			"memory": {"memory.limit_in_bytes": "1073741824"}}, ""},
		{"smallest quota", v2Files, nil, Limits{CPUs: 0.001}, map[string]map[string]string{"v2": {"cpu.max": "1000 100000"}}, ""},
		{"no limits writes nothing", v2Files, nil, Limits{}, map[string]map[string]string{"v2": {}}, ""},
		{"no controller for a limit", []string{"cgroup.procs"}, map[string][]string{"memory": {"memory.limit_in_bytes"}}, Limits{PidsMax: 100},
			nil, "pids_max is set but this host has no cgroup pids controller"},
		{"no cgroup at all", nil, nil, Limits{MemoryMax: 1 << 30}, nil, "memory_max is set but this host has no cgroup memory controller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v2 string
			if tc.v2 != nil {
				v2 = fakeV2(t, tc.v2...)
			}
			v1 := map[string]string{}
			for c, files := range tc.v1 {
				v1[c] = fakeCgroup(t, files...)
			}
			err := applyLimits(v2, v1, tc.limits)
			if wantedError(t, "applyLimits", err, tc.err) {
				return
			}
			for where, want := range tc.want {
				dir := v1[where]
				if where == "v2" {
					dir = v2
				}
				got := readFiles(t, dir)
				if len(got) != len(want) {
					t.Errorf("%s: wrote %q, want %q", where, got, want)
				}
				for f, v := range want {
					if got[f] != v {
						t.Errorf("%s/%s = %q, want %q", where, f, got[f], v)
					}
				}
			}
		})
	}
}

func TestOOMKills(t *testing.T) {
	write := func(dir, file, body string) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v2 := t.TempDir()
	write(v2, "memory.events", "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n")
	v1 := t.TempDir()
	write(v1, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
	empty := t.TempDir()
	for _, tc := range []struct {
		name string
		v2   string
		v1   map[string]string
		want uint64
	}{
		{"v2 memory.events", v2, map[string]string{"memory": v1}, 2},
		{"hybrid: v1 memory.oom_control", empty, map[string]string{"memory": v1}, 1},
		{"v1 without the file", "", map[string]string{"memory": empty}, 0},
		{"no memory controller", empty, nil, 0},
	} {
		got, err := OOMKills(tc.v2, tc.v1)
		if err != nil || got != tc.want {
			t.Errorf("%s: OOMKills = %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
	bad := t.TempDir()
	write(bad, "memory.events", "oom_kill lots\n")
	if _, err := OOMKills(bad, nil); err == nil {
		t.Error("OOMKills read a malformed oom_kill without an error")
	}
}

// A host without usable cgroups refuses to start a runner the config bounds: it would run unbounded.
func TestNoCgroupsRefusesALimitedRunner(t *testing.T) {
	l := &Launcher{} // no Cgroups: the host has none usable
	if _, err := l.prepareCgroup(Spec{AttemptID: "a1", Limits: Limits{PidsMax: 100}}); err == nil || !strings.Contains(err.Error(), "no usable cgroup") {
		t.Errorf("prepareCgroup with limits and no cgroups = %v, want a refusal saying the host has no usable cgroup", err)
	}
	if args, err := l.prepareCgroup(Spec{AttemptID: "a1"}); err != nil || len(args) != 0 {
		t.Errorf("prepareCgroup without limits and no cgroups = %q, %v; want no arguments and no error", args, err)
	}
}
