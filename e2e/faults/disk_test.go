//go:build e2e && linux

// A full disk is a tmpfs this test mounts (Linux mount(2)).

package faults

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/runner"
	"github.com/runner-manager/runner-manager/internal/status"
)

// stateFSSize is the size of the tmpfs the full-disk test puts the state directory on: room for
// the journal, the runner package (about 5 MB packed) and its extracted copy.
const stateFSSize = "64m"

// mountTmpfs mounts a fresh tmpfs of size at a new directory and unmounts it when the test ends
// (after the daemons' own cleanups, which are registered later). It needs CAP_SYS_ADMIN: the e2e
// suite runs as root in CI; elsewhere this test fails saying so, it is never skipped.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+size+",mode=0700"); err != nil {
		t.Fatalf("mount a %s tmpfs at %s for the full-disk test: %v (this test needs root, CAP_SYS_ADMIN)", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file in dir until the filesystem is full and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	// The last partial chunk may have left a few pages: spend them too.
	for _, n := range []int{64 << 10, 4 << 10, 512, 1} {
		for {
			if _, err := f.Write(chunk[:n]); err != nil {
				break
			}
		}
	}
	return path
}

// halfWritten lists what in stateDir looks like an unfinished write: temp files of the runner
// cache, the credential store or any atomic writer (leading dot plus a random suffix), and
// runtime directories.
func halfWritten(t *testing.T, stateDir string) []string {
	t.Helper()
	var out []string
	// The cache's ManifestDir is no temporary (the packages' recorded digests, internal/runner/verify.go);
	// temporary records would be dot files inside it.
	for _, sub := range []string{"cache", "credentials", filepath.Join("cache", runner.ManifestDir)} {
		entries, _ := os.ReadDir(filepath.Join(stateDir, sub))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") && !(sub == "cache" && e.Name() == runner.ManifestDir) {
				out = append(out, filepath.Join(sub, e.Name()))
			}
		}
	}
	entries, _ := os.ReadDir(runner.RuntimeRootFor(stateDir))
	for _, e := range entries {
		out = append(out, filepath.Join("runners", e.Name()))
	}
	return out
}

// TestFullStateDir: the state directory sits on a small tmpfs.
//   - Started on a full filesystem, the daemon exits 5 with a clear message, and starts normally
//     once space is freed (what it wrote before failing does not poison the journal).
//   - Running on a filesystem with less than min_free_disk free, no runner is launched (issue 26.4;
//     before it, a runner from the cached package still started there): status, a disk-low event
//     and the log say why, nothing is registered, the job stays queued and runs by itself once
//     space is freed.
//   - With min_free_disk = 0 (reloaded, next pass), a new runner version cannot be downloaded onto
//     the full disk: the launch fails with a clear error in log and status, nothing is left
//     half-written (no temp file, no runtime directory, no registration), the daemon keeps
//     running, and once space is freed the job runs by itself.
//   - A restart after that opens the journal and ends with nothing leaked.
func TestFullStateDir(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web"}})
	stateDir := mountTmpfs(t, stateFSSize)
	cfg := harness.NewConfig(t, sim)
	cfg.File.Daemon.StateDir = stateDir
	cfg.StateDir = stateDir
	// The tmpfs holds 64MiB: the default 1GiB would refuse every launch. 8MiB is what a full disk
	// (a few KiB left) is short of.
	cfg.File.Daemon.MinFreeDisk = 8 << 20
	cfg.Add(harness.RepoTarget("web", "acme/web", e2eLabels, 2))
	path := cfg.Write(t)

	// Start on a full filesystem.
	filler := fill(t, stateDir)
	code, stdout, stderr := runCLI(t, harness.Build(t), "daemon", "--config", path)
	if code != 5 {
		t.Errorf("daemon started on a full state dir exited %d, want 5 (local state)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "no space left on device") {
		t.Errorf("the daemon's error does not say the disk is full:\n%s", stderr)
	}
	t.Logf("start on a full disk: exit %d: %s", code, lastLine(stderr))
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	d := harness.StartDaemon(t, path)
	sim.WaitJobsDone(t, jobTimeout, sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond))

	// Short of min_free_disk on the state dir's filesystem, no runner is launched (issue 26.4):
	// status, an event and the log say why, and nothing is registered while the job waits.
	filler = fill(t, stateDir)
	mark := d.Mark()
	waiting := sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond)
	refused := d.WaitLog(t, mark, `min_free_disk`, 30*time.Second)
	t.Logf("full disk, launches refused: %s", refused.Raw)
	shown := waitTarget(t, d, "web", 30*time.Second, "last_error naming min_free_disk", func(ts status.Target) bool {
		return strings.Contains(ts.LastError, "min_free_disk") && strings.Contains(ts.LastError, stateDir)
	})
	if !slices.ContainsFunc(d.Status(t).Events, func(e status.Event) bool { return e.Kind == "disk-low" && e.Target == "web" }) {
		t.Errorf("status has no disk-low event for web; last_error %q", shown.LastError)
	}
	if regs := unremovedRegistrations(sim, "acme/web"); len(regs) != 0 {
		t.Errorf("registrations made while the disk was short of min_free_disk: %+v", regs)
	}
	if j := sim.MustJob(t, waiting); j.Status != ghsim.StatusQueued {
		t.Errorf("the job waiting for a runner is %s while launches are refused, want queued", j.Status)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// The refused pass backs off as retryable (5 s, doubling): the job runs soon after.
	sim.WaitJobsDone(t, 2*time.Minute, waiting)

	// A new runner version must be downloaded onto the full disk, min_free_disk off. (Intact bytes
	// under a new version: only the space is missing.)
	filler = fill(t, stateDir)
	next := sim.Package
	next.Version = "2.318.0"
	next.Filename = strings.Replace(sim.Package.Filename, sim.Package.Version, next.Version, 1)
	sim.ServeRunnerPackage(next)
	cfg.Target(t, "web").RunnerVersion = next.Version
	cfg.File.Daemon.MinFreeDisk = 0
	mark = d.Mark()
	harness.WriteConfigViaRename(t, path, cfg.Render(t))
	d.WaitLog(t, mark, `"msg":"config reloaded"`, 30*time.Second)
	job := sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond)
	full := d.WaitLog(t, mark, `no space left on device`, 30*time.Second)
	t.Logf("full disk while running: %s", full.Raw)
	if d.Exited() {
		code, out := d.Wait(t, time.Second)
		t.Fatalf("the daemon exited (%d) when the state dir filled up:\n%s", code, out)
	}
	harness.Eventually(t, 15*time.Second, "the failed launch to be undone", func() bool {
		return len(unremovedRegistrations(sim, "acme/web")) == 0 && len(halfWritten(t, stateDir)) == 0
	})
	shown = targetStatus(t, d.Status(t), "web")
	if !strings.Contains(shown.LastError, "no space left on device") {
		var evs []string
		for _, e := range d.Status(t).Events {
			if strings.Contains(e.Message, "no space left") {
				evs = append(evs, e.Message)
			}
		}
		if len(evs) == 0 {
			t.Errorf("status shows the full disk neither in last_error (%q) nor in an event", shown.LastError)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	// The failed pass backs the target off (the download error is classed terminal: 1 min).
	sim.WaitJobsDone(t, 2*time.Minute, job)
	t.Logf("the job ran %s after space was freed", time.Since(freed).Round(time.Second))
	stopWithin(t, d, drainBound(cfg))

	// The journal opens again and the restart concludes whatever the failures left.
	d2 := harness.StartDaemon(t, path)
	waitTarget(t, d2, "web", 30*time.Second, "a healthy pass after the restart", healthy)
	sim.WaitJobsDone(t, jobTimeout, sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond))
	stopWithin(t, d2, drainBound(cfg))
	harness.AssertNoLeaks(t, sim, stateDir)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return fmt.Sprint(lines[len(lines)-1])
}
