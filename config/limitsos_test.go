package config

import "testing"

// TestLimitsNeedLinuxCgroups: memory_max, cpus and pids_max are errors when the config is checked
// for macOS, on the target and in [daemon], and the same config is fine on Linux.
func TestLimitsNeedLinuxCgroups(t *testing.T) {
	const needs = " needs Linux: each runner's limits are its cgroup's, and macOS (this config is checked for darwin) has no cgroups"
	for _, tc := range []struct{ name, goos, body, want string }{
		{"target memory_max on linux", "linux", target("memory_max = \"2GiB\"\n"), ""},
		{"target memory_max on darwin", "darwin", target("memory_max = \"2GiB\"\n"), `6:1: target "api": memory_max` + needs},
		{"daemon cpus on darwin", "darwin", auth + "[daemon]\ncpus = 2\n", "4:1: daemon.cpus" + needs},
		{"daemon pids_max on darwin", "darwin", auth + "[daemon]\npids_max = 512\n", "4:1: daemon.pids_max" + needs},
		{"min_free_disk on darwin", "darwin", target("min_free_disk = \"2GiB\"\n"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(LoadBytes("c.toml", []byte(tc.body), Options{Offline: true, GOOS: tc.goos, Environ: func() []string { return nil }}))
			wantOne(t, got, tc.want)
		})
	}
}
