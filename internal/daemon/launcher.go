package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/runner"
)

// launcher adapts internal/runner (package policy and cache, shim launcher, liveness) to
// engine.Launcher; the GitHub lookup of a runner version is the only thing it adds.
type launcher struct {
	diag     *diagKeeper // keeps a failed attempt's logs before its directory goes
	cache    *runner.Cache
	packages *runner.Packages
	proc     *runner.Launcher
	gh       *gitHub
	users    *runner.SlotUsers // nil: runners run as the daemon's user
	host     string            // this host's id: its attempt ids, so its runner cgroups, start with it
}

func newLauncher(cache *runner.Cache, proc *runner.Launcher, gh *gitHub, users *runner.SlotUsers, host string, now func() time.Time) *launcher {
	return &launcher{cache: cache, packages: runner.NewPackages(cache, now), proc: proc, gh: gh, users: users, host: host}
}

func (l *launcher) Prepare(ctx context.Context, t config.Target, dir string) error {
	pkg, err := l.packages.Resolve(ctx, t.RunnerVersion, func(ctx context.Context, goos, arch, version string) (runner.Package, error) {
		ctx, c, s, err := l.gh.scoped(ctx, t)
		if err != nil {
			return runner.Package{}, err
		}
		p, err := c.RunnerPackage(ctx, s, goos, arch, version)
		if err != nil {
			return runner.Package{}, classify(err)
		}
		return runner.Package{Version: p.Version, OS: goos, Arch: arch, URL: p.URL, SHA256: p.SHA256}, nil
	})
	if err != nil {
		return err
	}
	// The runner's Prepare is idempotent: recovery may repeat it for an attempt that never started.
	if err := l.proc.Prepare(ctx, l.cache, pkg, dir); err != nil {
		return fmt.Errorf("runner package %s: %w", pkg.Version, err)
	}
	l.packages.Prune(ctx)
	return nil
}

func (l *launcher) Start(ctx context.Context, spec engine.LaunchSpec) (engine.Process, error) {
	var u *runner.User
	if l.users != nil {
		su, err := l.users.Ensure(ctx, spec.Slot)
		if err != nil {
			return engine.Process{}, err
		}
		u = &su
	}
	h, err := l.proc.Start(ctx, runner.Spec{
		User:       u,
		AttemptID:  spec.AttemptID,
		RuntimeDir: spec.RuntimeDir,
		JITConfig:  spec.JITConfig,
		Env:        spec.Env,
		WorkDir:    spec.WorkDir,
		Limits:     runner.Limits{MemoryMax: spec.Limits.MemoryMax.Bytes(), CPUs: spec.Limits.CPUs, PidsMax: spec.Limits.PidsMax},
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

var _ engine.Killer = (*launcher)(nil)

// Kill is engine.Killer: a runner stopped for cause that ignored the stop (a hung job).
func (l *launcher) Kill(ctx context.Context, p engine.Process, dir string) error {
	err := l.proc.Kill(ctx, runner.Handle{PID: p.PID, StartTime: p.StartTime}, dir)
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
	return engine.ExitStatus{Exited: true, Code: e.ExitCode, OOMKilled: e.OOMKills > 0}, nil
}

func (l *launcher) RemoveRuntimeDir(ctx context.Context, dir string) error {
	if l.diag != nil {
		l.diag.keep(ctx, dir)
	}
	return l.proc.RemoveRuntimeDir(ctx, dir)
}

func (l *launcher) RemoveWorkDir(ctx context.Context, dir string) error {
	return runner.RemoveWorkDir(ctx, dir)
}

func (l *launcher) CgroupPath(attemptID string) string { return l.proc.CgroupPath(attemptID) }

// Cgroups lists this host's runner cgroups: another daemon (another state dir) beside this one in
// the same cgroup has runners there too, and they are not this host's orphans.
func (l *launcher) Cgroups() ([]string, error) {
	cg := l.proc.Cgroups()
	if cg == nil {
		return nil, nil
	}
	names, err := cg.List()
	if err != nil {
		return nil, err
	}
	mine := names[:0]
	for _, n := range names {
		if strings.HasPrefix(n, l.host+"-") {
			mine = append(mine, n)
		}
	}
	return mine, nil
}

func (l *launcher) RemoveCgroup(ctx context.Context, attemptID string) error {
	if cg := l.proc.Cgroups(); cg != nil {
		return cg.Remove(ctx, attemptID)
	}
	return nil
}

// freeSpace is engine.Disk: statfs of the filesystems a launch writes to (min_free_disk).
type freeSpace struct{}

func (freeSpace) Free(path string) (int64, error) { return runner.FreeSpace(path) }
