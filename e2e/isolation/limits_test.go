//go:build e2e && linux

// The limit tests are Linux-only: memory_max, pids_max and the disk checks are cgroup v2 and
// statfs of a tmpfs this test mounts.

package isolation

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/runner"
	"github.com/runner-manager/runner-manager/internal/status"
)

// startLimited is startIsolated for the limit tests, with bound(target) applied to the target
// before the daemon starts.
func startLimited(t *testing.T, maxRunners int, bound func(*config.Target)) (*harness.Sim, *harness.Config, *harness.Daemon) {
	t.Helper()
	return startIsolatedWith(t, maxRunners, harness.DaemonOptions{}, bound)
}

// stillRuns checks that the daemon and the other runner (its listener pid, its job) outlived a
// hostile job's excess, then finishes the other job and stops the daemon clean.
func stillRuns(t *testing.T, sim *harness.Sim, cfg *harness.Config, d *harness.Daemon, other int64, otherPID int, hostile int64) {
	t.Helper()
	if d.Exited() {
		t.Fatalf("the daemon exited (%d) during the job", d.ExitCode())
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(otherPID)); err != nil {
		t.Errorf("the other runner's listener (pid %d) did not survive the job: %v", otherPID, err)
	}
	if j := sim.MustJob(t, other); j.Status != ghsim.StatusInProgress {
		t.Errorf("the other runner's job is %s, want still in progress", j.Status)
	}
	if err := sim.FinishJob(other, "success", false); err != nil {
		t.Fatal(err)
	}
	sim.WaitJobsDone(t, 60*time.Second, other)
	// The hostile job's runner may be killed with it (the kernel picks what to kill in its
	// cgroup): that is the limit at work, not the daemon killing a busy runner.
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir, hostile)
	stopClean(t, sim, cfg, d)
}

// runHostile queues a command job and returns its id and result.
func runHostile(t *testing.T, sim *harness.Sim, script string) (int64, ghsim.CommandResult) {
	t.Helper()
	id := queueCommand(t, sim, script)
	return id, waitResult(t, sim, id)
}

// TestJobPastMemoryMaxIsKilledAlone (issue 26.2): a job that allocates far more than its
// target's memory_max is killed inside its runner's cgroup; the attempt ends with failure reason
// out_of_memory in status (the target's failures and an event), while another runner's job of
// the same target and the daemon run on. Fails on a daemon without limits: the job completes.
func TestJobPastMemoryMaxIsKilledAlone(t *testing.T) {
	sim, cfg, d := startLimited(t, 2, func(tg *config.Target) { tg.MemoryMax = 64 << 20 })
	other, otherPID := busyBeside(t, sim, cfg)

	// dash holds a command substitution's whole output in memory: 512 MiB of it, eight times the
	// limit, in the job's own shell. The last line only prints when it was not killed.
	script := jobPrelude + `sees in-runner-cgroup sh -c 'grep -q "/runners/" /proc/self/cgroup'
big=$(head -c 536870912 /dev/zero | tr '\0' x)
echo "HOLE allocated: ${#big} bytes"
`
	id, res := runHostile(t, sim, script)
	checks := parseChecks(t, res)
	checks.wantSeen(t, "in-runner-cgroup")
	checks.who(t, cfg)
	if res.ExitCode == 0 {
		t.Errorf("the job that allocated 512MiB under memory_max 64MiB exited 0")
	}
	var shown status.Target
	harness.Eventually(t, 60*time.Second, "the attempt concluded with out_of_memory in status", func() bool {
		for _, ts := range d.Status(t).Targets {
			if ts.Name == "web" {
				shown = ts
			}
		}
		return shown.Failures["out_of_memory"] == 1
	})
	var events []string
	for _, e := range d.Status(t).Events {
		if strings.Contains(e.Message, "out_of_memory") {
			events = append(events, e.Kind+": "+e.Message)
		}
	}
	if len(events) != 1 || !strings.Contains(events[0], "memory_max") {
		t.Errorf("status events naming out_of_memory: %q, want one that names memory_max", events)
	}
	t.Logf("status: failures %v; %s", shown.Failures, strings.Join(events, "; "))
	stillRuns(t, sim, cfg, d, other, otherPID, id)
}

// TestForkBombStopsAtPidsMax (issue 26.2): a job that forks as fast as it can is stopped at its
// target's pids_max (its runner's cgroup counts processes and threads); another runner and the
// daemon run on. The bomb is bounded (at most 1000 sleeps of 3 s), so a host without the limit
// survives this test failing.
func TestForkBombStopsAtPidsMax(t *testing.T) {
	const pidsMax = 128
	sim, cfg, d := startLimited(t, 2, func(tg *config.Target) { tg.PidsMax = pidsMax })
	other, otherPID := busyBeside(t, sim, cfg)

	// The bomb runs in a child shell: dash exits when a fork fails. What follows it uses builtins
	// only, since the job cannot fork either until the sleeps end.
	script := jobPrelude + `sh -c 'i=0; while [ $i -lt 1000 ]; do sleep 3 & i=$((i+1)); echo $i > "$1/forks"; done' _ "$root" 2>/dev/null
echo "BOMB exit $?"
read -r n < "$root/forks"
echo "FORKS $n"
`
	id, res := runHostile(t, sim, script)
	checks := parseChecks(t, res)
	checks.who(t, cfg)
	var forks int
	for n := range checks["FORKS"] {
		forks, _ = strconv.Atoi(n)
	}
	t.Logf("the bomb forked %d sleeps under pids_max %d", forks, pidsMax)
	if forks == 0 || forks >= 1000 {
		t.Errorf("the fork bomb forked %d processes; want it stopped below pids_max %d (and at least one fork, or the test proves nothing)", forks, pidsMax)
	}
	if forks > pidsMax {
		t.Errorf("the fork bomb forked %d processes, more than pids_max %d", forks, pidsMax)
	}
	if _, ok := checks["BOMB"]["exit"]; !ok {
		t.Error("the job did not report the bomb's end")
	}
	stillRuns(t, sim, cfg, d, other, otherPID, id)
}

// TestJobFillingTheDiskStopsLaunches (issue 26.4): a job fills the filesystem of its target's
// work_dir and holds it; while it does, no other runner is launched (status names the work_dir and
// min_free_disk, a disk-low event says so, nothing is registered for the waiting job), and once
// the job ends and its work directory is removed, the waiting job runs. Fails on main: there the
// second runner starts on the full filesystem.
func TestJobFillingTheDiskStopsLaunches(t *testing.T) {
	workDir := filepath.Join(t.TempDir(), "work")
	if err := os.Mkdir(workDir, 0o755); err != nil {
		t.Fatal(err)
	}
	sim, cfg, d := startLimited(t, 2, func(tg *config.Target) {
		if err := unix.Mount("tmpfs", workDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=32m,mode=0755"); err != nil {
			t.Fatalf("mount a 32MiB tmpfs at %s as the target's work_dir: %v (this test needs root, CAP_SYS_ADMIN)", workDir, err)
		}
		t.Cleanup(func() { _ = unix.Unmount(workDir, unix.MNT_DETACH) })
		tg.WorkDir, tg.MinFreeDisk = workDir, 8<<20
	})
	harness.OpenAncestors(t, workDir)
	// The job fills its own work directory, <work_dir>/<attempt id>, and holds it for 15 s.
	script := jobPrelude + fmt.Sprintf(`wd=%s/$(basename "$attempt")
head -c 100000000 /dev/zero > "$wd/fill" 2>/dev/null
echo "FILLED $(df -k "$wd" | awk 'NR==2 {print $4}')"
sleep 15
`, shq(workDir))
	filler := queueCommand(t, sim, script)
	sim.WaitJobStatus(t, 60*time.Second, filler, ghsim.StatusInProgress)
	harness.Eventually(t, 30*time.Second, "the job to fill the work_dir", func() bool {
		free, err := runner.FreeSpace(workDir)
		return err == nil && free < 8<<20
	})
	regs := len(sim.RegistrationsOf("acme/web"))
	waiting := sim.MustQueue(t, "acme/web", []string{"e2e"}, 200*time.Millisecond)
	var shown status.Target
	harness.Eventually(t, 30*time.Second, "status naming the full work_dir", func() bool {
		for _, ts := range d.Status(t).Targets {
			if ts.Name == "web" {
				shown = ts
			}
		}
		return strings.Contains(shown.LastError, "min_free_disk") && strings.Contains(shown.LastError, workDir)
	})
	t.Logf("while the job holds the disk: %s", shown.LastError)
	if !slices.ContainsFunc(d.Status(t).Events, func(e status.Event) bool { return e.Kind == "disk-low" }) {
		t.Error("status has no disk-low event while launches are refused")
	}
	if j := sim.MustJob(t, waiting); j.Status != ghsim.StatusQueued {
		t.Errorf("the second job is %s while the work_dir is full, want queued", j.Status)
	}
	if n := len(sim.RegistrationsOf("acme/web")); n != regs {
		t.Errorf("%d registrations made while the work_dir was full", n-regs)
	}
	res := waitResult(t, sim, filler)
	checks := parseChecks(t, res)
	checks.who(t, cfg)
	if _, ok := checks["FILLED"]; !ok {
		t.Error("the job did not report filling its work directory")
	}
	sim.WaitJobsDone(t, 2*time.Minute, waiting)
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)
	stopClean(t, sim, cfg, d)
}
