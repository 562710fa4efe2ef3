package runner

import (
	"errors"
	"fmt"
	"slices"
)

// prepareCgroup creates the runner's cgroup, writes its limits and returns the shim's arguments
// that place the runner in it. Without cgroups it returns none.
func (l *Launcher) prepareCgroup(s Spec) ([]string, error) {
	if l.cg == nil {
		if !s.Limits.IsZero() {
			// Never run a runner unbounded while the config says it is bounded.
			return nil, errors.New("the config sets memory_max, cpus or pids_max, but this host has no usable cgroup to enforce them (the daemon logged why at start; status says so too): make cgroups usable, or remove those keys")
		}
		return nil, nil
	}
	p, err := l.cg.create(s.AttemptID)
	if err != nil {
		return nil, err
	}
	if err := applyLimits(p.V2, p.V1, s.Limits); err != nil {
		return nil, fmt.Errorf("write the runner's limits into its cgroup %s: %w", p.V2, err)
	}
	if l.after != nil {
		l.after(s.AttemptID)
	}
	args := []string{"--cgroup", p.V2}
	ctrls := make([]string, 0, len(p.V1))
	for c := range p.V1 {
		ctrls = append(ctrls, c)
	}
	slices.Sort(ctrls)
	for _, c := range ctrls {
		args = append(args, "--cgroup-v1", c+"="+p.V1[c])
	}
	return args, nil
}

// CgroupPath is the v2 cgroup attempt id's runner runs in, "" without cgroups: the engine journals
// it in the registered record, before Start creates it.
func (l *Launcher) CgroupPath(id string) string {
	if l.cg == nil {
		return ""
	}
	return l.cg.Path(id)
}

// Cgroups is the launcher's cgroups, nil when the host has none usable.
func (l *Launcher) Cgroups() *Cgroups { return l.cg }
