package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runner-manager/runner-manager/config"
)

func (w *world) Prepare(ctx context.Context, _ config.Target, dir string) error {
	w.mu.Lock()
	hold := w.holdPrepare
	w.mu.Unlock()
	if hold {
		<-ctx.Done()
		return ctx.Err()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dirs[dir] = true
	return nil
}

func (w *world) Start(_ context.Context, spec LaunchSpec) (Process, error) {
	a, err := w.j.Get(context.Background(), spec.AttemptID)
	if err != nil {
		return Process{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failStart != nil {
		return Process{}, w.failStart
	}
	if !w.dirs[spec.RuntimeDir] {
		w.violations = append(w.violations, "start without a prepared dir: "+spec.RuntimeDir)
	}
	if !strings.HasPrefix(spec.JITConfig, "SECRET-jit-") {
		w.violations = append(w.violations, "start without its JIT config")
	}
	w.starts[spec.AttemptID]++
	w.limits[spec.AttemptID] = spec.Limits
	if spec.WorkDir != "" {
		w.work[spec.WorkDir] = spec.RuntimeDir
	}
	w.nextPID++
	p := Process{PID: w.nextPID, StartTime: uint64(w.nextPID) * 10}
	w.procs[spec.RuntimeDir] = &fproc{p: p, name: a.RunnerName, target: a.Target, alive: true}
	w.running++
	w.perTarget[a.Target]++
	w.maxRunning = max(w.maxRunning, w.running)
	w.maxPer[a.Target] = max(w.maxPer[a.Target], w.perTarget[a.Target])
	return p, nil
}

func (w *world) procByPID(p Process) *fproc {
	for _, fp := range w.procs {
		if fp.p == p {
			return fp
		}
	}
	return nil
}

func (w *world) endLocked(fp *fproc, code int) {
	if !fp.alive {
		return
	}
	fp.alive, fp.exit = false, &code
	w.running--
	w.perTarget[fp.target]--
}

func (w *world) Stop(_ context.Context, p Process) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fp := w.procByPID(p)
	if fp == nil {
		return nil
	}
	w.stops[fp.name]++
	for _, r := range w.regs {
		if r.name == fp.name && !w.endedForCauseLocked(fp.name) {
			w.violations = append(w.violations, fmt.Sprintf("stopped %s while it was still registered (busy=%v)", fp.name, r.busy))
		}
	}
	if !w.deaf[fp.name] {
		w.endLocked(fp, 143)
	}
	return nil
}

// endedForCauseLocked reports whether the journal recorded runner name failed for cause
// (max_job_duration, ghost) before it was stopped: the one case a registered runner may be.
func (w *world) endedForCauseLocked(name string) bool {
	live, err := w.j.Live(context.Background())
	if err != nil {
		return false
	}
	for _, a := range live {
		if a.RunnerName == name {
			return endedForCause(a)
		}
	}
	return false
}

// Kill ends a runner at once, a deaf one too; only for one the journal ended for cause.
func (w *world) Kill(_ context.Context, p Process, dir string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fp := w.procs[dir]
	if fp == nil || fp.p != p {
		return nil
	}
	w.kills[fp.name]++
	if !w.endedForCauseLocked(fp.name) {
		w.violations = append(w.violations, "killed "+fp.name+" without a failed record for cause")
	}
	w.endLocked(fp, -1)
	return nil
}

func (w *world) Alive(p Process) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fp := w.procByPID(p)
	return fp != nil && fp.alive, nil
}

func (w *world) ShimProcess(dir string) (Process, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if fp, ok := w.procs[dir]; ok {
		return fp.p, true, nil
	}
	return Process{}, false, nil
}

func (w *world) ExitStatus(dir string) (ExitStatus, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if fp, ok := w.procs[dir]; ok && fp.exit != nil {
		return ExitStatus{Exited: true, Code: *fp.exit, OOMKilled: fp.oom}, nil
	}
	return ExitStatus{}, nil
}

func (w *world) RemoveRuntimeDir(_ context.Context, dir string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if fp, ok := w.procs[dir]; ok && fp.alive {
		w.violations = append(w.violations, "removed the directory of a live runner: "+dir)
	}
	delete(w.dirs, dir)
	delete(w.procs, dir)
	return nil
}

func (w *world) RemoveWorkDir(_ context.Context, dir string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rt, ok := w.work[dir]; ok && w.dirs[rt] {
		w.violations = append(w.violations, "removed the work directory of a runner whose runtime directory is still there: "+dir)
	}
	delete(w.work, dir)
	return nil
}

// workDirs lists the work directories Start was given that were not removed since.
func (w *world) workDirs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.work))
}

// exitRunners ends every running runner process of identity with code, leaving GitHub's
// registrations as they are (a runner that crashed, or ended without its job's completion).
func (w *world) exitRunners(identity string, code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.regs {
		if r.identity != identity {
			continue
		}
		for _, fp := range w.procs {
			if fp.name == r.name {
				w.endLocked(fp, code)
			}
		}
	}
}
