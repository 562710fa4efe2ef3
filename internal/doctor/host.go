package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/runner-manager/runner-manager/config"
)

// notHere is why a check of this kernel is skipped under --root ("" on the host itself).
func (e *Env) notHere() string {
	if e.Root != "" {
		return "not checked under --root: the tree's kernel and service manager are not this host's"
	}
	return ""
}

// checkCgroups says whether runners get a cgroup of their own (killed whole, limits applied).
func checkCgroups(_ context.Context, e *Env) []Finding {
	f := Finding{Check: "cgroups"}
	if why := e.notHere(); why != "" || e.Cgroups == nil {
		f.Status, f.Detail = Skip, why
		return []Finding{f}
	}
	dir, err := e.Cgroups()
	if err != nil {
		f.Status, f.Detail = Warn, "no usable cgroup v2 ("+err.Error()+"): runners get no cgroup of their own, a config that sets memory_max, cpus or pids_max has its launches refused, and a runner's leftovers are ended by its slot user's uid"
		f.Do = "mount a cgroup2 filesystem (Linux 5.14 or later for cgroup.kill); under systemd the unit sets Delegate=yes"
		return []Finding{f}
	}
	f.Status, f.Subject, f.Detail = OK, dir, "cgroup v2 with cgroup.kill: each runner gets a cgroup of its own"
	return []Finding{f}
}

// checkDocker is the Docker socket check of container targets. No container executor exists yet
// (issue 27), so no target can need the socket; the finding says so rather than pass silently.
func checkDocker(_ context.Context, _ *Env) []Finding {
	return []Finding{{Check: "docker socket", Status: Skip, Detail: "no container targets (this version runs runners on the host only)"}}
}

// lowDisk is the free space below which doctor warns when daemon.min_free_disk = 0 turns the
// daemon's own refusal off: its default, 1 GiB (a runner package is about 200 MB unpacked, and
// each job's work directory lives on that filesystem too).
const lowDisk = uint64(config.DefaultMinFreeDisk)

// checkFreeDisk checks the free space of the filesystem holding the state dir (the package cache
// and, beside it, the runtime directories) against daemon.min_free_disk, below which the daemon
// launches no runner. A target's own min_free_disk and work_dir are the daemon's to check at launch.
func checkFreeDisk(_ context.Context, e *Env) []Finding {
	state := e.daemon().StateDir
	f := Finding{Check: "free disk", Subject: state}
	if e.FreeBytes == nil {
		f.Status, f.Detail = Skip, "not measured on this platform"
		return []Finding{f}
	}
	need := uint64(e.daemon().MinFreeDisk)
	path := e.onDisk(state)
	free, err := e.FreeBytes(path)
	for errors.Is(err, fs.ErrNotExist) && filepath.Dir(path) != path { // not created yet: its filesystem
		path = filepath.Dir(path)
		free, err = e.FreeBytes(path)
	}
	switch {
	case err != nil:
		f.Status, f.Detail = Fail, e.shown(err.Error())
	case need == 0 && free < lowDisk:
		f.Status, f.Detail = Warn, fmt.Sprintf("%s free, less than %s, and daemon.min_free_disk = 0: runners are launched until the disk is full", bytes(free), bytes(lowDisk))
		f.Do = "free space on that filesystem, or move daemon.state_dir to a larger one"
	case free < need:
		f.Status, f.Detail = Fail, fmt.Sprintf("%s free, less than %s: the daemon launches no runner until there is more", bytes(free), bytes(need))
		f.Do = "free space on that filesystem, or move daemon.state_dir to a larger one"
	case need == 0:
		f.Status, f.Detail = OK, fmt.Sprintf("%s free", bytes(free))
	default:
		f.Status, f.Detail = OK, fmt.Sprintf("%s free (at least %s needed)", bytes(free), bytes(need))
	}
	return []Finding{f}
}

func bytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
