//go:build e2e

// Package dind tests docker = true on a real Docker Engine (a private dockerd, e2e/dockertest):
// the job's container gets a Docker daemon of its own in a sidecar made from this host's docker.io
// binaries (no registry), runs `docker run` there, and sees nothing of the host's Engine.
package dind

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/runner-manager/runner-manager/e2e/dockertest"
	"github.com/runner-manager/runner-manager/internal/container"
)

// jobScript is the job: wait for its daemon, import an image into it, run a container of that
// image, list what its daemon has, and look for the host's socket.
const jobScript = `#!/bin/sh
i=0
until docker version >/dev/null 2>&1; do
	i=$((i+1)); [ $i -gt 600 ] && { echo "no daemon at $DOCKER_HOST"; docker version; exit 3; }
	sleep 0.1
done
echo "daemon=$DOCKER_HOST uid=$(id -u)"
tar -C / -c bin | docker import - inner:1 >/dev/null || exit 4
docker run --rm --network none inner:1 /bin/sh -c 'echo inner-ran-as-$(id -u)' || exit 5
echo "containers=[$(docker ps --all --format '{{.Names}}' | tr '\n' ' ')]"
echo "images=[$(docker images --format '{{.Repository}}' | tr '\n' ' ')]"
for s in /var/run/docker.sock /run/docker.sock; do [ -e $s ] && echo "host-socket=$s"; done
echo done
`

// TestDockerJobRunsItsOwnDaemon: a docker = true job runs `docker run` of an image it imported into
// its own daemon; that daemon lists none of the host Engine's containers or images; the host's
// socket is not in the job; removing the job removes its sidecar and the sidecar's storage.
func TestDockerJobRunsItsOwnDaemon(t *testing.T) {
	d := dockertest.Start(t, dockertest.Options{})
	dind := d.DindImage(t, "rm-e2e/dind:1")
	// The job's image: the same binaries (the job needs the docker CLI) and the job script.
	root := t.TempDir()
	dockertest.DindRoot(t, root)
	if err := os.MkdirAll(filepath.Join(root, "job"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "job", "run.sh"), []byte(jobScript), 0o755); err != nil {
		t.Fatal(err)
	}
	job := d.Import(t, root, "rm-e2e/job:1", "WORKDIR /job", "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin", "ENV HOME=/tmp")
	// Something of the host's Engine the job must not see.
	d.Docker(t, "network", "create", "--driver", "bridge", "rm-e2e-jobs")
	d.Docker(t, "run", "--detach", "--name", "host-canary", "--network", "none", job.Name, "sleep", "600")

	api, err := client.NewClientWithOpts(client.WithHost(d.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	l := container.New(api, "e2e-host", nil)
	s := container.Spec{Name: "rm-e2e-dind-1", AttemptID: "e2e-1", Target: "web", RuntimeDir: t.TempDir(), JITConfig: "unused",
		UID: 4321, GID: 4321, Image: job.Name, Network: "rm-e2e-jobs", RunnerInImage: true,
		Docker: true, DockerImage: dind.Name, MemoryMax: 2 << 30, PidsMax: 4096}
	ctx := context.Background()
	if _, err := l.Start(ctx, s); err != nil {
		t.Fatalf("start the docker = true job: %v\nsidecar log:\n%s", err, logs(d, container.DindName(s.Name)))
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st, err := l.Inspect(ctx, s.Name)
		if err != nil {
			t.Fatal(err)
		}
		if st.Exited {
			if st.ExitCode != 0 {
				t.Fatalf("the job exited %d; its log:\n%s\nits sidecar's log:\n%s", st.ExitCode, logs(d, s.Name), logs(d, container.DindName(s.Name)))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not end within 3 minutes; its log:\n%s\nits sidecar's:\n%s", logs(d, s.Name), logs(d, container.DindName(s.Name)))
		}
		time.Sleep(200 * time.Millisecond)
	}
	out := logs(d, s.Name)
	t.Logf("the job's output:\n%s", out)
	for _, want := range []string{"daemon=" + container.DindHost + " uid=4321", "inner-ran-as-0", "containers=[]", "images=[inner ]", "done"} {
		if !strings.Contains(out, want) {
			t.Errorf("the job's output lacks %q", want)
		}
	}
	for _, leak := range []string{"host-canary", "rm-e2e/", "host-socket="} {
		if strings.Contains(out, leak) {
			t.Errorf("the job saw %q of the host", leak)
		}
	}

	if err := l.Remove(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if names := d.Docker(t, "ps", "--all", "--format", "{{.Names}}"); names != "host-canary" {
		t.Errorf("containers after Remove: %q; want only host-canary", names)
	}
	if vols := d.Docker(t, "volume", "ls", "--quiet"); vols != "" {
		t.Errorf("volumes after Remove: %q; want the sidecar's storage gone", vols)
	}
}

func logs(d *dockertest.Daemon, name string) string {
	out, err := d.DockerIn(nil, "logs", name)
	if err != nil {
		return err.Error()
	}
	return out
}
