package engine

import (
	"fmt"
	"log/slog"

	"github.com/runner-manager/runner-manager/config"
)

// Disk reports the free space of the filesystem holding path, as an unprivileged user may use it
// (statfs f_bavail x f_bsize), in bytes. A path not made yet is measured at its nearest existing
// parent. internal/daemon's implementation uses statfs; nil in Deps: no check.
type Disk interface {
	Free(path string) (int64, error)
}

// Launch refusal reasons: the `reason` of LaunchRefusalObserver.
const (
	// RefusalLowDisk: a filesystem a launch writes to had less free space than min_free_disk.
	RefusalLowDisk = "low_disk"
)

// LaunchRefusalObserver is the optional Observer extension told of every pass that wanted to
// launch runners and launched none for a host condition (*metrics.Metrics has it:
// runner_manager_launches_refused_total).
type LaunchRefusalObserver interface{ LaunchRefused(target, reason string) }

// LowDiskError refuses a launch: the filesystem of Path has Free bytes, less than Min
// (min_free_disk). It has no classifying method, so the pass backs off as retryable: space
// is often freed within minutes, and the jobs stay queued at GitHub meanwhile.
type LowDiskError struct {
	Target    string
	Path      string
	Free, Min config.ByteSize
}

func (e *LowDiskError) Error() string {
	return fmt.Sprintf("no runner launched for target %s: the filesystem of %s has %s free, less than min_free_disk (%s); free space there (or lower min_free_disk): launches resume by themselves",
		e.Target, e.Path, e.Free, e.Min)
}

// diskRoom checks the filesystems a launch for t writes to (the journal and package cache in
// the state dir, the runtime root, t's work_dir) against t's min_free_disk. It emits an event
// when the host runs short and when it has room again, not on every refused pass.
func (l *loop) diskRoom(cfg *config.Config, t config.Target) error {
	least := cfg.MinFreeDiskOf(t)
	if l.sup.deps.Disk == nil || least <= 0 {
		return nil
	}
	var low *LowDiskError
	for _, p := range []string{cfg.Daemon.StateDir, l.sup.opts.RuntimeRoot, t.WorkDir} {
		if p == "" {
			continue
		}
		free, err := l.sup.deps.Disk.Free(p)
		if err != nil {
			return fmt.Errorf("no runner launched for target %s: read the free space of %s (min_free_disk): %w", t.Name, p, err)
		}
		if config.ByteSize(free) < least {
			low = &LowDiskError{Target: t.Name, Path: p, Free: config.ByteSize(free), Min: least}
			break
		}
	}
	was := l.diskLow
	l.diskLow = low != nil
	switch {
	case low != nil:
		if f, ok := l.sup.deps.Observer.(LaunchRefusalObserver); ok {
			f.LaunchRefused(l.key.name, RefusalLowDisk)
		}
		if !was {
			l.emit(slog.LevelWarn, "", EventDiskLow, low.Error())
		}
		return low
	case was:
		l.emit(slog.LevelInfo, "", EventDiskLow, fmt.Sprintf("target %s: every filesystem a launch writes to has at least min_free_disk (%s) free again: launching", t.Name, least))
	}
	return nil
}
