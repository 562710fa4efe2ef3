package daemon

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/config"
)

func TestCheckTraversable(t *testing.T) {
	base := t.TempDir()
	closed := filepath.Join(base, "closed")
	root := filepath.Join(closed, "state-runners")
	if err := os.MkdirAll(root, 0o711); err != nil {
		t.Fatal(err)
	}
	// t.TempDir's own directories may be 0700: open them, then close one on purpose.
	for d := closed; d != filepath.Dir(d); d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := checkTraversable(root); err != nil {
		t.Fatalf("open ancestors refused: %v", err)
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	err := checkTraversable(root)
	if err == nil || !strings.Contains(err.Error(), "chmod o+x "+closed) {
		t.Fatalf("a 0700 ancestor: got %v, want an error naming chmod o+x %s", err, closed)
	}
}

// Who runners run as, for every setting and a root or non-root daemon: a daemon that cannot switch
// users says so and what to do, as a warning when the setting is absent and as a refusal when
// per-slot users were asked for.
func TestRunnerUsersSaysWhatANonRootDaemonCannotDo(t *testing.T) {
	for _, tc := range []struct {
		name, setting string
		euid          int
		perSlot       bool
		warn, err     string
	}{
		{"absent, root", "", 0, true, "", ""},
		{"per-slot, root", config.RunnerUserPerSlot, 0, true, "", ""},
		{"daemon, root", config.RunnerUserDaemon, 0, false, `runners run as the daemon's own user (daemon.runner_user = \"daemon\")`, ""},
		{"absent, not root", "", 1000, false, `the daemon is not root, so runners run as its own user and a job can read its credentials and the state dir; run the daemon as root to give each runner slot its own user, or set daemon.runner_user = \"daemon\" to accept this`, ""},
		{"per-slot, not root", config.RunnerUserPerSlot, 1000, false, "", `daemon.runner_user = "per-slot" needs a root daemon to switch runners to their slot users (uid 1000 cannot): run the daemon as root, or set daemon.runner_user = "daemon"`},
		{"daemon, not root", config.RunnerUserDaemon, 1000, false, `runners run as the daemon's own user`, ""},
		{"absent, Windows", "", -1, false, `runners run as the daemon's own account (Windows has no per-slot runner users)`, ""},
		{"daemon, Windows", config.RunnerUserDaemon, -1, false, `runners run as the daemon's own user`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			users, err := runnerUsers(config.Daemon{RunnerUser: tc.setting, RunnerUserPrefix: "rm-r"}, tc.euid, slog.New(slog.NewTextHandler(&logs, nil)))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || (users != nil) != tc.perSlot {
				t.Fatalf("runnerUsers = %v, %v; want per-slot users %v", users, err, tc.perSlot)
			}
			if tc.perSlot && users.Name(2) != "rm-r2" {
				t.Fatalf("slot 2 runs as %s, want rm-r2", users.Name(2))
			}
			if tc.warn == "" && logs.Len() != 0 || !strings.Contains(logs.String(), tc.warn) {
				t.Fatalf("log = %q, want %q", logs.String(), tc.warn)
			}
		})
	}
}

// Only Linux is told to mount cgroups; elsewhere the warning says what the OS gives instead.
func TestNoCgroupsWarningFitsTheOS(t *testing.T) {
	for goos, want := range map[string]string{
		"linux":   "Mount a cgroup2 filesystem",
		"windows": "job object",
		"darwin":  "cgroups are Linux-only",
	} {
		got := noCgroupsWarning(goos)
		if !strings.Contains(got, want) || goos != "linux" && strings.Contains(got, "cgroup2") {
			t.Errorf("%s: %q, want it to say %q and name cgroup2 only on Linux", goos, got, want)
		}
	}
}
