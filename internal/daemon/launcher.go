package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/runner"
)

// resolveTTL bounds how long "latest" keeps meaning the same release: new releases are picked up
// within it, and idle hosts do not ask GitHub for the downloads list on every launch.
const resolveTTL = time.Hour

// launcher adapts internal/runner (package cache, shim launcher, liveness) to engine.Launcher.
type launcher struct {
	cache *runner.Cache
	proc  *runner.Launcher
	gh    *gitHub
	now   func() time.Time

	mu       sync.Mutex
	resolved map[string]resolvedPackage // runner_version as configured -> package
}

type resolvedPackage struct {
	pkg runner.Package
	at  time.Time
}

func newLauncher(cache *runner.Cache, proc *runner.Launcher, gh *gitHub, now func() time.Time) *launcher {
	return &launcher{cache: cache, proc: proc, gh: gh, now: now, resolved: map[string]resolvedPackage{}}
}

func (l *launcher) Prepare(ctx context.Context, t config.Target, dir string) error {
	pkg, err := l.resolve(ctx, t)
	if err != nil {
		return err
	}
	// The runner's Prepare is idempotent: recovery may repeat it for an attempt that never started.
	if err := l.proc.Prepare(ctx, l.cache, pkg, dir); err != nil {
		return fmt.Errorf("runner package %s: %w", pkg.Version, err)
	}
	l.prune(ctx)
	return nil
}

func (l *launcher) resolve(ctx context.Context, t config.Target) (runner.Package, error) {
	version := t.RunnerVersion
	if version == "" {
		version = "latest"
	}
	l.mu.Lock()
	r, ok := l.resolved[version]
	l.mu.Unlock()
	if ok && l.now().Sub(r.at) < resolveTTL {
		return r.pkg, nil
	}
	c, s, err := l.gh.scoped(t)
	if err != nil {
		return runner.Package{}, err
	}
	goos, arch := githubPlatform()
	p, err := c.RunnerPackage(ctx, s, goos, arch, version)
	if err != nil {
		return runner.Package{}, classify(err)
	}
	pkg := runner.Package{Version: p.Version, OS: goos, Arch: arch, URL: p.URL, SHA256: p.SHA256}
	l.mu.Lock()
	l.resolved[version] = resolvedPackage{pkg: pkg, at: l.now()}
	l.mu.Unlock()
	return pkg, nil
}

// prune drops cached packages no configured version resolves to. Runtime directories are
// hardlinked copies, so a live runner keeps its files even when its cached version goes.
func (l *launcher) prune(ctx context.Context) {
	l.mu.Lock()
	keep := map[string]bool{}
	for _, r := range l.resolved {
		keep[r.pkg.Key()] = true
	}
	l.mu.Unlock()
	_, _ = l.cache.Prune(ctx, func(key string) bool { return keep[key] })
}

// githubPlatform spells this host's OS and architecture as GitHub's runner downloads do.
func githubPlatform() (goos, arch string) {
	goos, arch = runtime.GOOS, runtime.GOARCH
	switch goos {
	case "darwin":
		goos = "osx"
	}
	switch arch {
	case "amd64":
		arch = "x64"
	case "386":
		arch = "x86"
	}
	return goos, arch
}

func (l *launcher) Start(ctx context.Context, spec engine.LaunchSpec) (engine.Process, error) {
	h, err := l.proc.Start(ctx, runner.Spec{
		AttemptID:  spec.AttemptID,
		RuntimeDir: spec.RuntimeDir,
		JITConfig:  spec.JITConfig,
		Env:        spec.Env,
		WorkDir:    spec.WorkDir,
	})
	if err != nil {
		return engine.Process{}, err
	}
	return engine.Process{PID: h.PID, StartTime: h.StartTime}, nil
}

func (l *launcher) Stop(ctx context.Context, p engine.Process) error {
	err := l.proc.Stop(ctx, runner.Handle{PID: p.PID, StartTime: p.StartTime})
	if errors.Is(err, runner.ErrNotRunning) {
		return nil
	}
	return err
}

func (l *launcher) Alive(p engine.Process) (bool, error) { return runner.Alive(p.PID, p.StartTime) }

func (l *launcher) ShimProcess(dir string) (engine.Process, bool, error) {
	st, err := runner.ReadShimState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return engine.Process{}, false, nil
	}
	if err != nil {
		return engine.Process{}, false, err
	}
	return engine.Process{PID: st.PID, StartTime: st.StartTime}, true, nil
}

func (l *launcher) ExitStatus(dir string) (engine.ExitStatus, error) {
	e, ok, err := runner.ExitStatus(dir)
	if err != nil || !ok {
		return engine.ExitStatus{}, err
	}
	return engine.ExitStatus{Exited: true, Code: e.ExitCode}, nil
}

func (l *launcher) RemoveRuntimeDir(ctx context.Context, dir string) error {
	return l.proc.RemoveRuntimeDir(ctx, dir)
}
