package runner

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// Kill ends at once the runner that shim h supervises in runtime directory dir (killTree): on
// Unix SIGKILL to the runner process as shim.json identifies it (the daemon's file: a job cannot
// redirect it), after which the shim kills what is left in the runner's process group; on Windows
// the attempt's job object is terminated whole. The shim records the exit, as for any end. The engine calls it only for a runner it recorded failed for cause (max_job_duration,
// ghost) that ignored Stop for its grace: a hung job. ErrNotRunning means the runner (or the
// shim, which then recorded the exit) has already gone.
func (l *Launcher) Kill(ctx context.Context, h Handle, dir string) error {
	abs, _, err := l.inAnyRoot(dir)
	if err != nil {
		return fmt.Errorf("kill runner: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kill runner in %s: %w", abs, err)
	}
	st, err := ReadShimState(abs)
	if err != nil {
		return fmt.Errorf("kill runner in %s: read the shim's state: %w", abs, err)
	}
	if st.PID != h.PID || st.StartTime != h.StartTime {
		return fmt.Errorf("kill runner in %s: the shim there (pid %d) is not the one journaled (pid %d): %w", abs, st.PID, h.PID, ErrNotRunning)
	}
	if st.RunnerPID <= 0 {
		// The shim never started its runner: it has nothing to wait for but a stop.
		return signalIdentified(h.PID, h.StartTime, syscall.SIGKILL)
	}
	if err := killTree(st); err != nil && !errors.Is(err, ErrNotRunning) {
		return fmt.Errorf("kill runner pid %d in %s: %w", st.RunnerPID, abs, err)
	}
	return nil
}
