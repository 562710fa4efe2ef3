//go:build e2e

package dockertest

import (
	"os"
	"strings"
	"testing"
)

// TestDaemonRunsImportedImage starts a private dockerd, imports the runner image and runs it as a
// non-root uid: the fake runner is there and refuses to start without a JIT config; every binary
// of the dind image runs (its libraries came along); cleanup leaves nothing of the daemon behind.
func TestDaemonRunsImportedImage(t *testing.T) {
	var dir string
	t.Run("daemon", func(t *testing.T) {
		d := Start(t, Options{})
		dir = d.Dir
		img := d.RunnerImage(t, "rm-test/runner:1")
		if !strings.HasPrefix(img.ID, "sha256:") {
			t.Fatalf("image ID %q", img.ID)
		}
		if got := d.Docker(t, "run", "--rm", "--network", "none", "--user", "4321:4321", img.Name, "id", "-u"); got != "4321" {
			t.Fatalf("id -u in the container = %q, want 4321", got)
		}
		out, err := d.DockerIn(nil, "run", "--rm", "--network", "none", "--user", "4321:4321", img.Name, RunnerDir+"/run.sh")
		if err == nil || !strings.Contains(err.Error(), "no JIT config") {
			t.Fatalf("run.sh without a JIT config: out %q, err %v; want the fake runner's refusal", out, err)
		}
		dind := d.DindImage(t, "rm-test/dind:1")
		for _, bin := range dindBinaries {
			flag := "--version"
			if bin == "containerd-shim-runc-v2" {
				flag = "-v"
			}
			if out, err := d.DockerIn(nil, "run", "--rm", "--network", "none", dind.Name, bin, flag); err != nil {
				t.Fatalf("%s --version in the dind image: %v (out %q)", bin, err, out)
			}
		}
		if n := len(d.Containers(t)); n != 0 {
			t.Fatalf("%d containers left after --rm runs", n)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the daemon's directory %s is still there after cleanup (stat: %v)", dir, err)
	}
}
