//go:build e2e

package container

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/dockertest"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/runner/runnerusertest"
)

const repo = "acme/web"

var labels = []string{"e2e"}

// world is one simulator, one private dockerd with the runner image, and a config whose one
// target runs its runners in containers on the host's network (the fake runner reaches the
// simulator on 127.0.0.1).
type world struct {
	t      *testing.T
	sim    *harness.Sim
	docker *dockertest.Daemon
	cfg    *harness.Config
	path   string
}

// dockerEngine is a private dockerd with the runner image imported, which several worlds may share.
type dockerEngine struct {
	d     *dockertest.Daemon
	image string
}

func newEngine(t *testing.T) dockerEngine {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("container runners run as per-slot users and need a root daemon and a dockerd of the test's own: run the e2e suite as root, as CI does")
	}
	d := dockertest.Start(t, dockertest.Options{})
	return dockerEngine{d: d, image: d.RunnerImage(t, "rm-e2e-runner:1").Name}
}

func newWorld(t *testing.T, maxRunners int, edit func(*config.Target)) *world {
	t.Helper()
	return newEngine(t).world(t, maxRunners, edit)
}

// world is a simulator, a state directory and a config on the engine.
func (e dockerEngine) world(t *testing.T, maxRunners int, edit func(*config.Target)) *world {
	t.Helper()
	d, img := e.d, e.image
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{repo}})
	cfg := harness.NewConfig(t, sim)
	cfg.File.Daemon.RunnerUser = config.RunnerUserPerSlot
	cfg.File.Daemon.RunnerUserPrefix = runnerusertest.Prefix()
	cfg.File.Daemon.DockerHost = d.Host
	cfg.File.Daemon.Executor = config.ExecutorHost
	tg := harness.RepoTarget("web", repo, labels, maxRunners)
	tg.Executor, tg.Image, tg.Network, tg.ImagePull = config.ExecutorContainer, img, "host", config.PullNever
	if edit != nil {
		edit(&tg)
	}
	cfg.Add(tg)
	harness.OpenAncestors(t, filepath.Dir(cfg.StateDir))
	return &world{t: t, sim: sim, docker: d, cfg: cfg, path: cfg.Write(t)}
}

// start runs a daemon on the world's config with env added.
func (w *world) start(env ...string) *harness.Daemon {
	w.t.Helper()
	return harness.StartDaemon(w.t, w.path, append(env, "RUNNER_MANAGER_TEST_CALL_TIMEOUT=10s")...)
}

// containers is what the private dockerd holds, as "name state" lines.
func (w *world) containers() []string {
	w.t.Helper()
	out := w.docker.Docker(w.t, "ps", "--all", "--format", "{{.Names}} {{.State}} {{.Label \"io.github.runner-manager.attempt\"}}")
	return strings.Fields(strings.ReplaceAll(out, "\n", " | "))
}

// waitNoContainers waits until the dockerd holds no container: every runner's was removed.
func (w *world) waitNoContainers(timeout time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for len(w.docker.Containers(w.t)) > 0 {
		if time.Now().After(deadline) {
			w.t.Fatalf("containers left %s after their jobs: %v", timeout, w.containers())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopClean stops d with SIGTERM and checks it left nothing: no registration, directory or container.
func (w *world) stopClean(d *harness.Daemon) {
	w.t.Helper()
	d.Signal(15)
	if code, out := d.Wait(w.t, 30*time.Second); code != 0 {
		w.t.Fatalf("daemon exited %d after SIGTERM; stdout:\n%s", code, out)
	}
	harness.AssertNoLeaks(w.t, w.sim, w.cfg.StateDir)
	if c := w.docker.Containers(w.t); len(c) != 0 {
		w.t.Fatalf("containers left after the stop: %v", w.containers())
	}
}

// running is the name of the one running container.
func (w *world) running(t *testing.T) string {
	t.Helper()
	names := strings.Fields(w.docker.Docker(t, "ps", "--filter", "status=running", "--format", "{{.Names}}"))
	if len(names) != 1 {
		t.Fatalf("want one running container, the dockerd has %v", names)
	}
	return names[0]
}

// busyJob queues a job that lasts until FinishJob and waits until a runner has taken it.
func (w *world) busyJob() int64 {
	w.t.Helper()
	id, err := w.sim.QueueJobSpec(ghsim.JobSpec{Repo: repo, Labels: labels, Duration: -1})
	if err != nil {
		w.t.Fatal(err)
	}
	w.sim.WaitJobStatus(w.t, 90*time.Second, id, ghsim.StatusInProgress)
	return id
}
