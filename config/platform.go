package config

import (
	"fmt"
	"strconv"
)

// validateWindows refuses what a Windows host cannot do (c.goos, Options.GOOS). Runner processes
// there run as the service's account, in job objects: per-slot users and the cgroups that bound a
// runner are Linux's (docs/security.md, Windows).
func (c *checker) validateWindows(cfg *Config) {
	if c.goos != "windows" {
		return
	}
	if cfg.Daemon.RunnerUser != RunnerUserDaemon {
		c.add(SeverityError, "daemon.runner_user", `daemon.runner_user must be "daemon" on Windows: runners run as the service's account there (per-slot runner users exist on Linux only). Set daemon.runner_user = "daemon" to say so, and install the service under a dedicated local account rather than LocalSystem, since a job can read and change whatever that account can (docs/security.md)`)
	}
	c.linuxLimits("daemon", cfg.Daemon.MemoryMax, cfg.Daemon.CPUs, cfg.Daemon.PidsMax)
	for i, t := range cfg.Targets {
		c.linuxLimits("target."+strconv.Itoa(i), t.MemoryMax, t.CPUs, t.PidsMax)
	}
}

// linuxLimits refuses the limits only a Linux cgroup enforces: a Windows runner would run
// unbounded while the config says it is bounded.
func (c *checker) linuxLimits(prefix string, memory ByteSize, cpus float64, pids int) {
	for _, k := range []struct {
		key string
		set bool
	}{{"memory_max", memory != 0}, {"cpus", cpus != 0}, {"pids_max", pids != 0}} {
		if k.set {
			p := prefix + "." + k.key
			c.add(SeverityError, p, fmt.Sprintf("%s is enforced by the runner's Linux cgroup, and Windows has none for it here: remove it (Windows runners run unbounded, in a job object that only ends them)", display(p)))
		}
	}
}
