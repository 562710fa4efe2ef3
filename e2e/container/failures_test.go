//go:build e2e

package container

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/status"
)

// TestLaunchFailuresHaveNames: a container runner that cannot start fails its launch with its own
// reason in status (failures and last_error) and backs off, leaving no container and no
// registration: an image not on the host under image_pull = "never" (image_missing), an image
// without the shell run.sh needs (runner_dependency_missing), and a docker_host where no Engine
// answers (container_runtime_unavailable) (issue 27 item 4).
func TestLaunchFailuresHaveNames(t *testing.T) {
	e := newEngine(t)
	bare := t.TempDir() // a root filesystem with no shell: run.sh cannot run
	if err := os.MkdirAll(filepath.Join(bare, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bare, "etc", "passwd"), []byte("root:x:0:0::/:/nologin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.d.Import(t, bare, "rm-e2e-bare:1")
	for _, tc := range []struct {
		reason string
		edit   func(*world, *config.Target)
	}{
		{"image_missing", func(_ *world, tg *config.Target) { tg.Image = "rm-e2e-not-here:1" }},
		{"runner_dependency_missing", func(_ *world, tg *config.Target) { tg.Image = "rm-e2e-bare:1" }},
		{"container_runtime_unavailable", func(w *world, _ *config.Target) {
			w.cfg.File.Daemon.DockerHost = "unix://" + filepath.Join(t.TempDir(), "no-engine.sock")
		}},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			w := e.world(t, 1, nil)
			tc.edit(w, w.cfg.Target(t, "web"))
			w.path = w.cfg.Write(t)
			d := w.start()
			job := w.sim.MustQueue(t, repo, labels, time.Second)
			var got status.Target
			harness.Eventually(t, 90*time.Second, "a launch failure counted as "+tc.reason, func() bool {
				for _, ts := range d.Status(t).Targets {
					if ts.Name == "web" {
						got = ts
					}
				}
				return got.Failures[tc.reason] > 0 && strings.Contains(got.LastError, tc.reason)
			})
			if !strings.Contains(d.Stdout(), `"msg":"pass failed, next try in `) {
				t.Errorf("the failed launch did not back off (no \"pass failed, next try in\" line)")
			}
			if n := got.Failures["launch_failed"]; n != 0 {
				t.Errorf("%d launches counted as launch_failed, want them all %s", n, tc.reason)
			}
			t.Logf("status: failures %v, last_error %s", got.Failures, got.LastError)
			if j := w.sim.MustJob(t, job); j.Status == "completed" {
				t.Errorf("the job completed though no runner could start")
			}
			w.stopClean(d)
		})
	}
}
