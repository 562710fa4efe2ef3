//go:build e2e

package faults

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// corruptVersion is the runner version whose package bytes do not match the sha256 GitHub lists.
const corruptVersion = "2.318.0"

// serveCorruptPackage lists a newer runner package whose bytes are the real package with one byte
// flipped, under the real package's sha256, so `latest` picks it and verification must fail.
func serveCorruptPackage(t *testing.T, sim *harness.Sim) ghsim.Package {
	t.Helper()
	data, err := os.ReadFile(sim.Package.Path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	pkg := sim.Package
	pkg.Version = corruptVersion
	pkg.Filename = strings.Replace(pkg.Filename, ghsim.FakeRunnerVersion, corruptVersion, 1)
	pkg.Path = filepath.Join(t.TempDir(), pkg.Filename)
	if err := os.WriteFile(pkg.Path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sim.ServeRunnerPackage(pkg) // pkg.SHA256 is still the intact package's
	return pkg
}

// cacheLeftovers lists what the runner cache holds of version, and any temp download file.
func cacheLeftovers(t *testing.T, stateDir, version string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(stateDir, "cache"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".download-") || strings.HasPrefix(e.Name(), ".extract-") || strings.Contains(e.Name(), version) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCorruptRunnerDownloadIsRefused: `latest` is a package whose sha256 does not match. The daemon
// refuses it, says so in its log and status, keeps no partial or unverified file in its cache, and
// deregisters the runner it registered for each failed attempt. Pinning the intact version by a
// reload then runs the job.
func TestCorruptRunnerDownloadIsRefused(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web"}})
	serveCorruptPackage(t, sim)
	cfg := harness.NewConfig(t, sim)
	cfg.Add(harness.RepoTarget("web", "acme/web", e2eLabels, 2))
	d := harness.StartDaemon(t, cfg.Write(t))

	job := sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond)
	refused := d.WaitLog(t, 0, `failed verification`, 30*time.Second)
	if !strings.Contains(refused.Raw, corruptVersion) || !strings.Contains(refused.Raw, sim.Package.SHA256) {
		t.Errorf("the refusal does not name the version and the published sha256: %s", refused.Raw)
	}
	var shown string
	harness.Eventually(t, 30*time.Second, "status to show the refused download", func() bool {
		snap := d.Status(t)
		for _, e := range snap.Events {
			if strings.Contains(e.Message, "failed verification") {
				shown = e.Kind + ": " + e.Message
				return true
			}
		}
		if ts := targetStatus(t, snap, "web"); strings.Contains(ts.LastError, "failed verification") {
			shown = "last_error: " + ts.LastError
			return true
		}
		return false
	})
	t.Logf("status shows: %s", shown)
	// The failed attempt's registration is deleted, and nothing of the download stays in the cache.
	harness.Eventually(t, 15*time.Second, "the failed attempt's registration to be deleted", func() bool {
		return len(sim.RegistrationsOf("acme/web")) > 0 && len(unremovedRegistrations(sim, "acme/web")) == 0
	})
	if left := cacheLeftovers(t, cfg.StateDir, corruptVersion); len(left) > 0 {
		t.Errorf("the runner cache keeps files of the refused download: %v", left)
	}
	if j := sim.MustJob(t, job); j.Status != ghsim.StatusQueued {
		t.Fatalf("job %d is %s although no verified runner package exists", job, j.Status)
	}

	// A second attempt on the same corrupt package (a reload wakes the loop out of its backoff).
	cfg.Target(t, "web").MaxRunners = 3
	mark := d.Mark()
	harness.WriteConfigViaRename(t, cfg.Path, cfg.Render(t))
	d.WaitRecord(t, mark, 30*time.Second, "the pass after the reload", harness.OfKind("backoff"))
	harness.Eventually(t, 15*time.Second, "every failed attempt's registration to be deleted", func() bool {
		return len(unremovedRegistrations(sim, "acme/web")) == 0
	})
	// Concluding a failed attempt must not itself fail: a pass that fails on it backs the target off
	// (1 min doubling) even once GitHub serves an intact package again.
	for _, l := range harness.Records(d.Logs(), harness.OfKind("backoff")) {
		if strings.Contains(l.Msg, "open runtime root") {
			t.Errorf("a pass failed while concluding the refused attempt (the runtime root %s/runners was never created): %s",
				cfg.StateDir, l.Msg)
			break
		}
	}

	// Pinning the intact version applies at once (a reload wakes the loop) and runs the job.
	cfg.Target(t, "web").RunnerVersion = ghsim.FakeRunnerVersion
	mark = d.Mark()
	harness.WriteConfigViaRename(t, cfg.Path, cfg.Render(t))
	d.WaitLog(t, mark, `"msg":"config reloaded"`, 30*time.Second)
	sim.WaitJobsDone(t, jobTimeout, job)
	if left := cacheLeftovers(t, cfg.StateDir, corruptVersion); len(left) > 0 {
		t.Errorf("the runner cache keeps files of the refused download: %v", left)
	}
	stopClean(t, sim, d, drainBound(cfg))
}
