package config

import (
	"fmt"
	"math"
	"strconv"
)

// Bounds of the resource limit keys (TestBounds has a row for each). 0 (or absent) means no limit.
const (
	// MinMemoryMax is the smallest memory_max: below it the runner itself cannot start.
	MinMemoryMax ByteSize = 16 << 20
	// MaxByteSize bounds memory_max and min_free_disk: a slip of a unit, not a real host.
	MaxByteSize ByteSize = 64 << 40
	// MinCPUs is the smallest cpus: the kernel's smallest CPU quota is 1 ms per 100 ms period.
	MinCPUs = 0.01
	// MaxCPUs bounds cpus.
	MaxCPUs = 1024
	// MinPidsMax is the smallest pids_max: pids.max counts threads, and the runner's own
	// Runner.Listener and Runner.Worker use dozens before a job starts.
	MinPidsMax = 64
	// MaxPidsMax is the kernel's PID_MAX_LIMIT, the most tasks a host can have.
	MaxPidsMax = 4 << 20
	// DefaultMinFreeDisk is daemon.min_free_disk when the file does not set it.
	DefaultMinFreeDisk ByteSize = 1 << 30
)

// Limits bound what one runner (its whole process tree, in its cgroup) may use. A zero field
// means no limit. LimitsOf resolves a target's.
type Limits struct {
	MemoryMax ByteSize // memory.max (RAM, and no swap beyond it)
	CPUs      float64  // cpu.max quota in CPUs
	PidsMax   int      // pids.max: processes and threads
}

// LimitsOf is what bounds each runner of t: each key t sets, else the daemon's.
func (c *Config) LimitsOf(t Target) Limits {
	l := Limits{MemoryMax: t.MemoryMax, CPUs: t.CPUs, PidsMax: t.PidsMax}
	if l.MemoryMax == 0 {
		l.MemoryMax = c.Daemon.MemoryMax
	}
	if l.CPUs == 0 {
		l.CPUs = c.Daemon.CPUs
	}
	if l.PidsMax == 0 {
		l.PidsMax = c.Daemon.PidsMax
	}
	return l
}

// MinFreeDiskOf is the free space t's launches need on the filesystems of the state dir, the
// runtime root and t's work_dir: t's own min_free_disk, else the daemon's.
func (c *Config) MinFreeDiskOf(t Target) ByteSize {
	if t.MinFreeDisk != 0 {
		return t.MinFreeDisk
	}
	return c.Daemon.MinFreeDisk
}

// validateLimits checks the limit keys of [daemon] (prefix "daemon") or of a target (prefix
// "target.N"). A target's 0 means "the daemon's", the daemon's 0 means none.
func (c *checker) validateLimits(prefix string, memory, disk ByteSize, cpus float64, pids int) {
	c.checkSize(prefix+".memory_max", memory, MinMemoryMax, "the runner itself needs that much")
	c.checkSize(prefix+".min_free_disk", disk, 0, "")
	switch p := prefix + ".cpus"; {
	case cpus < 0 || math.IsNaN(cpus):
		c.add(SeverityError, p, fmt.Sprintf("%s must not be negative (got %s)", display(p), fmtFloat(cpus)))
	case cpus > 0 && cpus < MinCPUs:
		c.add(SeverityError, p, fmt.Sprintf("%s must be at least %s, the smallest CPU quota the kernel enforces (got %s)", display(p), fmtFloat(MinCPUs), fmtFloat(cpus)))
	case cpus > MaxCPUs:
		c.add(SeverityError, p, tooLarge(p, fmtFloat(MaxCPUs), fmtFloat(cpus)))
	}
	switch p := prefix + ".pids_max"; {
	case pids < 0:
		c.add(SeverityError, p, fmt.Sprintf("%s must not be negative (got %d)", display(p), pids))
	case pids > 0 && pids < MinPidsMax:
		c.add(SeverityError, p, fmt.Sprintf("%s must be at least %d: it counts threads, and the runner itself uses dozens (got %d)", display(p), MinPidsMax, pids))
	case pids > MaxPidsMax:
		c.add(SeverityError, p, tooLarge(p, strconv.Itoa(MaxPidsMax)+", the kernel's PID_MAX_LIMIT", strconv.Itoa(pids)))
	}
	c.limitsOS(prefix, memory, cpus, pids)
}

// checkSize reports a size below least (when set) or past MaxByteSize.
func (c *checker) checkSize(path string, n, least ByteSize, why string) {
	switch {
	case n < 0:
		c.add(SeverityError, path, fmt.Sprintf("%s must not be negative (got %d)", display(path), n))
	case n > 0 && n < least:
		c.add(SeverityError, path, fmt.Sprintf("%s must be at least %s: %s (got %s)", display(path), least, why, n))
	case n > MaxByteSize:
		c.add(SeverityError, path, tooLarge(path, MaxByteSize.String(), n.String()))
	}
}

// checkSizeValue is checkValue for a ByteSize: a string with a unit, or a whole number of bytes.
func (c *checker) checkSizeValue(v any, path string) bool {
	switch n := v.(type) {
	case string:
		if _, err := ParseByteSize(n); err != nil {
			if big, ok := err.(errSizeTooLarge); ok {
				c.add(SeverityError, path, tooLarge(path, MaxByteSize.String(), strconv.Quote(big.written)))
			} else {
				c.add(SeverityError, path, fmt.Sprintf("%s: %v", display(path), err))
			}
			return false
		}
		return true
	case int, int64:
		return true
	case uint64:
		if n > math.MaxInt64 {
			c.add(SeverityError, path, tooLarge(path, MaxByteSize.String(), strconv.FormatUint(n, 10)))
			return false
		}
		return true
	}
	c.add(SeverityError, path, fmt.Sprintf(`%s must be a size such as "512MiB" or a whole number of bytes (got %s)`, display(path), describe(v, path)))
	return false
}

// checkFloatValue is checkValue for a decimal number (cpus): a TOML/YAML integer or float.
func (c *checker) checkFloatValue(v any, path string) bool {
	switch v.(type) {
	case int, int64, uint64, float64:
		return true
	}
	c.add(SeverityError, path, fmt.Sprintf("%s must be a number such as 1.5 (got %s)", display(path), describe(v, path)))
	return false
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// limitsOS refuses the runner limits on macOS: they are enforced by the runner's cgroup, and
// macOS has no cgroups, so the daemon there would refuse every launch of the runners they bound.
// TestLimitsNeedLinuxCgroups.
func (c *checker) limitsOS(prefix string, memory ByteSize, cpus float64, pids int) {
	if c.goos != "darwin" {
		return
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"memory_max", memory != 0}, {"cpus", cpus != 0}, {"pids_max", pids != 0}} {
		if p := prefix + "." + k.key; k.set {
			c.add(SeverityError, p, fmt.Sprintf("%s needs Linux: each runner's limits are its cgroup's, and macOS (this config is checked for darwin) has no cgroups, so every launch this bounds would be refused; remove %s on a Mac (docs/operations.md, macOS)", display(p), display(p)))
		}
	}
}
