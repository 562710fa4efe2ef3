package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/container"
	"github.com/runner-manager/runner-manager/internal/redact"
	"github.com/runner-manager/runner-manager/internal/runner"
	"github.com/runner-manager/runner-manager/journal"
)

// inspectTimeout bounds a Docker call made where the engine gives no context (liveness and exit
// status reads): the socket is local, so a slow answer is a stuck Engine.
const inspectTimeout = 10 * time.Second

// executors is the engine's Launcher: a host runner runs under the shim (launcher), a container
// runner through internal/container. An attempt is a container's when its journaled Process or
// spec names one, or its runtime directory does (container.ReadState): the directory names the
// container before it is created, so recovery finds it at every step.
type executors struct {
	*launcher // host runners; also Prepare's package, cgroups and work directories
	ctr       *container.Launcher
}

// newExecutors wraps the host launcher with a Docker client of docker_host (connected lazily:
// a host that runs no container runner never talks to Docker).
// The redactor learns the registry credentials an image pull reads.
// crash is the crash tests' hook (nil in production).
func newExecutors(host *launcher, cfg *config.Config, hostID string, r *redact.Redactor, crash engine.CrashHook) (*executors, error) {
	c, err := container.Dial(cfg.Daemon.DockerHost)
	if err != nil {
		return nil, err
	}
	ctr := container.New(c, hostID, container.Images{API: c, Redactor: r})
	if crash != nil {
		ctr.AfterCreate = func(id string) { crash(engine.CrashAfterContainerCreated, id) }
	}
	return &executors{launcher: host, ctr: ctr}, nil
}

func (e *executors) Prepare(ctx context.Context, t config.Target, dir string) error {
	if t.RunnerInImage {
		// The image ships the runner: the directory only holds the container's name and logs.
		return os.MkdirAll(dir, 0o755)
	}
	return e.launcher.Prepare(ctx, t, dir)
}

func (e *executors) Start(ctx context.Context, spec engine.LaunchSpec) (engine.Process, error) {
	if spec.Container == "" {
		return e.launcher.Start(ctx, spec)
	}
	if e.users == nil {
		return engine.Process{}, errors.New("container runners run as their slot's unprivileged uid, and runners here run as the daemon's user: run the daemon as root without daemon.runner_user = \"daemon\"")
	}
	u, err := e.users.Ensure(ctx, spec.Slot)
	if err != nil {
		return engine.Process{}, err
	}
	// Slot hygiene, and the runner's directories become the slot's (the container's uid).
	if spec.Target.RunnerInImage {
		err = runner.CleanUser(ctx, u)
	} else {
		err = e.proc.HandOver(ctx, u, spec.RuntimeDir)
	}
	if err != nil {
		return engine.Process{}, err
	}
	t, lim := spec.Target, spec.Limits
	h, err := e.ctr.Start(ctx, container.Spec{Name: spec.Container, AttemptID: spec.AttemptID, Target: t.Name, RuntimeDir: spec.RuntimeDir,
		JITConfig: spec.JITConfig, Env: spec.Env, UID: u.UID, GID: u.GID,
		Image: t.Image, ImagePull: t.ImagePullOf(), RegistryAuthFile: t.RegistryAuthFile, Network: t.Network, Volumes: t.Volumes,
		RunnerInImage: t.RunnerInImage, Docker: t.Docker, DockerImage: t.DockerImage,
		MemoryMax: lim.MemoryMax.Bytes(), CPUs: lim.CPUs, PidsMax: lim.PidsMax})
	if err != nil {
		return engine.Process{}, err
	}
	return engine.Process{PID: h.PID, StartTime: h.StartTime, Container: h.Name}, nil
}

func (e *executors) Stop(ctx context.Context, p engine.Process) error {
	if p.Container == "" {
		return e.launcher.Stop(ctx, p)
	}
	return e.ctr.Signal(ctx, p.Container, "SIGTERM")
}

func (e *executors) Kill(ctx context.Context, p engine.Process, dir string) error {
	if p.Container == "" {
		return e.launcher.Kill(ctx, p, dir)
	}
	return e.ctr.Signal(ctx, p.Container, "SIGKILL")
}

// Alive is a local check for both: a container's init is a process on the host, and it ends
// with its container. One that never got a pid (it ended before Start read it) is not alive.
func (e *executors) Alive(p engine.Process) (bool, error) {
	if p.Container != "" && p.PID == 0 {
		return false, nil
	}
	return e.launcher.Alive(p)
}

// ShimProcess is a running container's init for a container attempt (a created container that
// never started has none: recovery deregisters the attempt and removes it).
func (e *executors) ShimProcess(dir string) (engine.Process, bool, error) {
	st, ok, err := container.ReadState(dir)
	if err != nil || !ok {
		if err != nil {
			return engine.Process{}, false, err
		}
		return e.launcher.ShimProcess(dir)
	}
	s, err := e.inspect(st.Name)
	if err != nil || !s.Running {
		return engine.Process{}, false, err
	}
	return engine.Process{PID: s.PID, StartTime: s.StartTime, Container: st.Name}, true, nil
}

func (e *executors) ExitStatus(dir string) (engine.ExitStatus, error) {
	st, ok, err := container.ReadState(dir)
	if err != nil || !ok {
		if err != nil {
			return engine.ExitStatus{}, err
		}
		return e.launcher.ExitStatus(dir)
	}
	s, err := e.inspect(st.Name)
	if err != nil || !s.Exited {
		return engine.ExitStatus{}, err
	}
	return engine.ExitStatus{Exited: true, Code: s.ExitCode, OOMKilled: s.OOMKilled}, nil
}

func (e *executors) inspect(name string) (container.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), inspectTimeout)
	defer cancel()
	return e.ctr.Inspect(ctx, name)
}

// RemoveRuntimeDir removes a container attempt's container (the slot's hygiene: nothing of its
// job reaches the next) before its directory.
func (e *executors) RemoveRuntimeDir(ctx context.Context, dir string) error {
	st, ok, err := container.ReadState(dir)
	if err != nil {
		return err
	}
	if ok {
		if err := e.ctr.Remove(ctx, st.Name); err != nil {
			return err
		}
	}
	return e.launcher.RemoveRuntimeDir(ctx, dir)
}

// sweepContainers removes this host's runner containers that no live attempt names (a journal
// lost or replaced): run at startup before any loop, as the engine sweeps cgroups. Hosts with no
// container target and no live container attempt skip it, so they never need Docker.
func (e *executors) sweepContainers(ctx context.Context, cfg *config.Config, j interface {
	Live(context.Context) ([]journal.Attempt, error)
}, log *slog.Logger) {
	live, err := j.Live(ctx)
	if err != nil {
		return // the engine's recovery reports an unreadable journal
	}
	named := map[string]bool{}
	for _, a := range live {
		if a.Container != "" {
			named[a.Container] = true
		}
	}
	uses := len(named) > 0
	for _, t := range cfg.Targets {
		uses = uses || cfg.ExecutorOf(t) == config.ExecutorContainer
	}
	if !uses {
		return
	}
	// A stuck Engine must not hold the daemon's start: the sweep is retried at the next one.
	ctx, cancel := context.WithTimeout(ctx, 3*inspectTimeout)
	defer cancel()
	present, err := e.ctr.List(ctx)
	if err != nil {
		log.Warn("startup recovery could not list this host's runner containers; orphans are looked for again at the next start", "err", err)
		return
	}
	for _, c := range present {
		if named[c.Name] {
			continue
		}
		if err := e.ctr.Remove(ctx, c.Name); err != nil {
			log.Warn("remove orphan runner container", "container", c.Name, "err", err)
			continue
		}
		log.Info(fmt.Sprintf("removed orphan runner container %s of attempt %s (no live attempt names it)", c.Name, c.Attempt))
	}
}
