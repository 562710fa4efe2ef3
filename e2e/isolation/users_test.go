//go:build e2e && unix

package isolation

import (
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/runner/runnerusertest"
)

// TestRunnersRunAsTheirSlotUsers runs two jobs at once with per-slot users: each runner runs
// as a uid that is neither root nor the daemon's, the two differ, the jobs complete, and a
// runner's uid cannot read the GitHub credential or the state dir.
func TestRunnersRunAsTheirSlotUsers(t *testing.T) {
	sim, cfg, d := startIsolated(t, 2)

	jobs := []int64{
		sim.MustQueue(t, "acme/web", []string{"e2e"}, 8*time.Second),
		sim.MustQueue(t, "acme/web", []string{"e2e"}, 8*time.Second),
	}
	// attempt -> the non-root uids its processes run as
	var uids map[string]map[uint32]bool
	harness.Eventually(t, 60*time.Second, "two runners running as slot users", func() bool {
		uids = runnerUIDs(t, cfg.StateDir)
		n := 0
		for _, u := range uids {
			if len(u) > 0 {
				n++
			}
		}
		return n == 2
	})
	seen := map[uint32]string{}
	for attempt, us := range uids {
		if len(us) != 1 {
			t.Errorf("attempt %s runs as several uids: %v", attempt, us)
		}
		for uid := range us {
			if uid == 0 || uid == uint32(os.Geteuid()) {
				t.Errorf("attempt %s's runner runs as uid %d, the daemon's or root", attempt, uid)
			}
			if other, ok := seen[uid]; ok {
				t.Errorf("attempts %s and %s run as the same uid %d", attempt, other, uid)
			}
			seen[uid] = attempt
			for _, p := range []string{sim.TokenFile, cfg.StateDir} {
				if out, err := asUID(uid, "cat", p); err == nil {
					t.Errorf("runner uid %d can read %s: %q", uid, p, out)
				}
			}
			if out, err := asUID(uid, "ls", cfg.StateDir); err == nil {
				t.Errorf("runner uid %d can list the state dir %s: %q", uid, cfg.StateDir, out)
			}
		}
	}
	sim.WaitJobsDone(t, 90*time.Second, jobs...)
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)
	stopClean(t, sim, cfg, d)
}

// startIsolated starts a simulator with acme/web and a daemon running per-slot runner users (with
// this test process's prefix) for one target of maxRunners runners labelled e2e. It fails unless
// root, as per-slot users need a root daemon.
func startIsolated(t *testing.T, maxRunners int) (*harness.Sim, *harness.Config, *harness.Daemon) {
	t.Helper()
	return startIsolatedWith(t, maxRunners, harness.DaemonOptions{}, nil)
}

// startIsolatedWith is startIsolated with the daemon started by o (another binary, a wrapper)
// and, when bound is not nil, bound applied to the target before the daemon starts. It needs
// root (per-slot users, and cgroups for the limits): elsewhere it fails saying so, never skips.
func startIsolatedWith(t *testing.T, maxRunners int, o harness.DaemonOptions, bound func(*config.Target)) (*harness.Sim, *harness.Config, *harness.Daemon) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the isolation tests need a root daemon (per-slot runner users and a cgroup per runner); run the e2e suite as root, as CI does")
	}
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web"}})
	cfg := harness.NewConfig(t, sim)
	cfg.File.Daemon.RunnerUser = config.RunnerUserPerSlot
	cfg.File.Daemon.RunnerUserPrefix = runnerusertest.Prefix()
	cfg.Add(harness.RepoTarget("web", "acme/web", []string{"e2e"}, maxRunners))
	if bound != nil {
		bound(cfg.Target(t, "web"))
	}
	harness.OpenAncestors(t, filepath.Dir(cfg.StateDir))
	return sim, cfg, harness.StartDaemonWith(t, cfg.Write(t), o)
}

// stopClean stops the daemon with SIGTERM and checks it exited 0 and left nothing behind.
func stopClean(t *testing.T, sim *harness.Sim, cfg *harness.Config, d *harness.Daemon) {
	t.Helper()
	d.Signal(syscall.SIGTERM)
	if code, out := d.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("daemon exited %d after SIGTERM; stdout:\n%s", code, out)
	}
	harness.AssertNoLeaks(t, sim, cfg.StateDir)
}

// runnerUIDs maps each live attempt to the uids, other than root, of its processes.
func runnerUIDs(t *testing.T, stateDir string) map[string]map[uint32]bool {
	t.Helper()
	ps, err := harness.RunnerProcesses(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[uint32]bool{}
	for _, p := range ps {
		uid, ok := processUID(p.PID)
		if !ok || uid == 0 {
			continue
		}
		attempt := harness.AttemptOfProcess(stateDir, p)
		if out[attempt] == nil {
			out[attempt] = map[uint32]bool{}
		}
		out[attempt][uid] = true
	}
	return out
}

// processUID is the effective uid in /proc/<pid>/status.
func processUID(pid int) (uint32, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if f := bytes.Fields(line); len(f) >= 3 && string(f[0]) == "Uid:" {
			uid, err := strconv.ParseUint(string(f[2]), 10, 32)
			return uint32(uid), err == nil
		}
	}
	return 0, false
}

// asUID runs name as uid (its own group, no supplementary groups), as a job would.
func asUID(uid uint32, name string, args ...string) (string, error) {
	gid := uid
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		if g, err := strconv.ParseUint(u.Gid, 10, 32); err == nil {
			gid = uint32(g)
		}
	}
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
