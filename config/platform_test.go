package config

import (
	"strings"
	"testing"
)

// On Windows runners run as the service's account: validate says so unless the file does
// (runner_user = "daemon"), and refuses the limits only a Linux cgroup enforces. The same files
// are valid for Linux.
func TestWindowsRules(t *testing.T) {
	const asDaemon = "[daemon]\nrunner_user = \"daemon\"\n"
	const daemonWarning = `warning: daemon.runner_user = "daemon": runners run as the service's account, so a job can read the GitHub credential, the state dir and other runners' secrets; install the service under a dedicated local account`
	for _, tc := range []struct {
		name, body string
		windows    []string // every problem on Windows, in order
		linux      int      // how many problems on Linux
	}{
		{"runner_user unset", auth, []string{`daemon.runner_user must be "daemon" on Windows: runners run as the service's account there (per-slot runner users exist on Linux only). Set daemon.runner_user = "daemon" to say so, and install the service under a dedicated local account rather than LocalSystem`}, 0},
		{"runner_user per-slot", "[daemon]\nrunner_user = \"per-slot\"\n" + auth, []string{`2:1: daemon.runner_user must be "daemon" on Windows`}, 0},
		{"runner_user daemon", asDaemon + auth, []string{"2:1: " + daemonWarning}, 1},
		{"daemon memory_max", asDaemon + "memory_max = \"2GiB\"\n" + auth, []string{
			"2:1: " + daemonWarning, `3:1: daemon.memory_max is enforced by the runner's Linux cgroup, and Windows has none for it here: remove it`}, 1},
		{"target cpus and pids_max", asDaemon + target("cpus = 2.0\npids_max = 500\n"), []string{
			"2:1: " + daemonWarning, `8:1: target "api": cpus is enforced by the runner's Linux cgroup`, `9:1: target "api": pids_max is enforced by the runner's Linux cgroup`}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, goos := range []string{"windows", "linux"} {
				cfg, err := LoadBytes("c.toml", []byte(tc.body), Options{Environ: func() []string { return nil }, Offline: true, GOOS: goos})
				got := problemsOf(cfg, err)
				if goos == "linux" {
					if len(got) != tc.linux {
						t.Errorf("linux: %q, want %d problems", got, tc.linux)
					}
					continue
				}
				if len(got) != len(tc.windows) {
					t.Fatalf("windows: %q, want %q", got, tc.windows)
				}
				for i, want := range tc.windows {
					if !strings.Contains(got[i], want) {
						t.Errorf("windows problem %d: %q, want it to contain %q", i, got[i], want)
					}
				}
			}
		})
	}
}
