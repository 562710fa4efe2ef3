package daemon

import (
	"log/slog"

	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/runner"
)

// cgroupState is how this daemon ends runners: by their cgroups, or (none usable) by their slots'
// uids. Status shows it; the start logs it.
type cgroupState struct {
	cgroups *runner.Cgroups // nil: no usable cgroups
	missing string          // why not, when cgroups is nil
}

// detectCgroups finds the runners' cgroups once at start and says at WARN when there are none:
// runners then run without a tree that can be killed whole, and slot hygiene falls back to
// killing the slot's uid (docs/runner-processes.md, "cgroups").
func detectCgroups(log *slog.Logger, goos string) cgroupState {
	cg, err := runner.DetectCgroups()
	if err != nil {
		log.Warn(noCgroupsWarning(goos), "err", err)
		return cgroupState{missing: err.Error()}
	}
	log.Info("runners run in cgroups of their own", "cgroup_root", cg.Root())
	for ctrl, why := range cg.V1Missing {
		log.Warn("runners do not join this v1 controller: a config that sets its limit has its launches refused", "controller", ctrl, "err", why)
	}
	return cgroupState{cgroups: cg}
}

// crashHook is the launcher's AfterCgroup: the crash tests' kill point between a runner's cgroup
// and its start (nil in production).
func (c cgroupState) crashHook(crash engine.CrashHook) func(string) {
	if crash == nil || c.cgroups == nil {
		return nil
	}
	return func(id string) { crash(engine.CrashAfterCgroup, id) }
}

// noCgroupsWarning says what a host without cgroups costs and what to do, as goos allows: only
// Linux has cgroups to mount (validate refuses the limits elsewhere).
func noCgroupsWarning(goos string) string {
	switch goos {
	case "linux":
		return "no usable cgroups: runners do not get a cgroup of their own, so no memory, CPU or process limit can apply (a config that sets memory_max, cpus or pids_max has its launches refused) and a runner's leftovers are ended by killing its slot user's processes (kill(-1) as that uid); with runner_user = \"daemon\" nothing ends them. Mount a cgroup2 filesystem (and under systemd set Delegate=yes) to fix this"
	case "windows":
		return "cgroups are Linux-only: runners get no memory, CPU or process limit here; each runner's process tree is in a job object of its own, which ends it whole"
	}
	return "cgroups are Linux-only: runners get no memory, CPU or process limit here, and a runner's leftovers are ended by killing its slot user's processes; with runner_user = \"daemon\" nothing ends them"
}
