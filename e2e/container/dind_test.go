//go:build e2e

package container

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/dockertest"
	"github.com/runner-manager/runner-manager/e2e/harness"
	ctr "github.com/runner-manager/runner-manager/internal/container"
	"github.com/runner-manager/runner-manager/internal/ghsim"
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

// TestDockerJobRunsItsOwnDaemonLauncher is TestDockerJobRunsItsOwnDaemon at the launcher, on a
// network the test creates: a docker = true job runs `docker run` of an image it imported into its
// own daemon; that daemon lists none of the host Engine's containers or images; the host's socket
// is not in the job; removing the job removes its sidecar and the sidecar's storage.
func TestDockerJobRunsItsOwnDaemonLauncher(t *testing.T) {
	d := dockertest.Start(t, dockertest.Options{})
	dind := d.DindImage(t, "rm-e2e/dind:1")
	job := jobImage(t, d, "rm-e2e/job:1")
	// Something of the host's Engine the job must not see.
	d.Docker(t, "network", "create", "--driver", "bridge", "rm-e2e-jobs")
	d.Docker(t, "run", "--detach", "--name", "host-canary", "--network", "none", job.Name, "sleep", "600")

	api, err := client.NewClientWithOpts(client.WithHost(d.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	l := ctr.New(api, "e2e-host", nil)
	s := ctr.Spec{Name: "rm-e2e-dind-1", AttemptID: "e2e-1", Target: "web", RuntimeDir: t.TempDir(), JITConfig: "unused",
		UID: 4321, GID: 4321, Image: job.Name, Network: "rm-e2e-jobs", RunnerInImage: true,
		Docker: true, DockerImage: dind.Name, MemoryMax: 2 << 30, PidsMax: 4096}
	ctx := context.Background()
	if _, err := l.Start(ctx, s); err != nil {
		t.Fatalf("start the docker = true job: %v\nsidecar log:\n%s", err, logs(d, ctr.DindName(s.Name)))
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st, err := l.Inspect(ctx, s.Name)
		if err != nil {
			t.Fatal(err)
		}
		if st.Exited {
			if st.ExitCode != 0 {
				t.Fatalf("the job exited %d; its log:\n%s\nits sidecar's log:\n%s", st.ExitCode, logs(d, s.Name), logs(d, ctr.DindName(s.Name)))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not end within 3 minutes; its log:\n%s\nits sidecar's:\n%s", logs(d, s.Name), logs(d, ctr.DindName(s.Name)))
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkDockerJob(t, logs(d, s.Name), "4321")

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

// checkDockerJob checks jobScript's output: its own daemon ran an inner container and lists
// nothing of the host Engine's (host-canary, the rm-e2e images), and no host socket was there.
func checkDockerJob(t *testing.T, out, uid string) {
	t.Helper()
	t.Logf("the job's output:\n%s", out)
	for _, want := range []string{"daemon=" + ctr.DindHost + " uid=" + uid, "inner-ran-as-0", "containers=[]", "images=[inner ]", "done"} {
		if !strings.Contains(out, want) {
			t.Errorf("the job's output lacks %q", want)
		}
	}
	for _, leak := range []string{"host-canary", "rm-e2e", "host-socket="} {
		if strings.Contains(out, leak) {
			t.Errorf("the job saw %q of the host", leak)
		}
	}
}

// jobImage imports the job's image: the dind root (the job needs the docker CLI), HOME in /tmp.
func jobImage(t *testing.T, d *dockertest.Daemon, name string) dockertest.Image {
	t.Helper()
	root := t.TempDir()
	dockertest.DindRoot(t, root)
	if err := os.MkdirAll(filepath.Join(root, "job"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "job", "run.sh"), []byte(jobScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return d.Import(t, root, name, "WORKDIR /job", "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin", "ENV HOME=/tmp")
}

// TestDockerJobRunsItsOwnDaemon: through the real daemon, a docker = true target's job (on the
// host's network, so its runner reaches the simulator) runs `docker run` in a daemon of its own:
// an image it imported runs there, the daemon lists nothing of the host Engine's (a canary runs
// there), no host socket is in the job; after the job its container and sidecar are gone, with the
// sidecar's storage (issue 27 item 5).
func TestDockerJobRunsItsOwnDaemon(t *testing.T) {
	w := newWorld(t, 1, func(tg *config.Target) {
		tg.Image, tg.Docker, tg.DockerImage = "rm-e2e-job:1", true, "rm-e2e-dind:1"
	})
	w.docker.DindImage(t, "rm-e2e-dind:1")
	jobImage(t, w.docker, "rm-e2e-job:1")
	w.docker.Docker(t, "run", "--detach", "--name", "host-canary", "--network", "none", "rm-e2e-job:1", "sleep", "600")
	d := w.start()
	id, err := w.sim.QueueJobSpec(ghsim.JobSpec{Repo: repo, Labels: labels, Command: "sh /job/run.sh"})
	if err != nil {
		t.Fatal(err)
	}
	w.sim.WaitJobsDone(t, 4*time.Minute, id)
	res, ok := w.sim.CommandResult(id)
	if !ok || res.ExitCode != 0 {
		t.Fatalf("job result %+v (%v); want exit 0", res, ok)
	}
	uid := ""
	if _, rest, ok := strings.Cut(res.Stdout, " uid="); ok {
		uid, _, _ = strings.Cut(rest, "\n")
	}
	if uid == "" || uid == "0" {
		t.Fatalf("the job ran as uid %q, want a slot's", uid)
	}
	checkDockerJob(t, res.Stdout, uid)
	harness.Eventually(t, 60*time.Second, "the job's container and its sidecar to be removed", func() bool {
		return len(w.docker.Containers(t)) == 1 // host-canary
	})
	w.docker.Docker(t, "rm", "--force", "host-canary")
	if vols := w.docker.Docker(t, "volume", "ls", "--quiet"); vols != "" {
		t.Errorf("volumes after the job: %q; want the sidecar's storage gone", vols)
	}
	w.stopClean(d)
}
