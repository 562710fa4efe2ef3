package runner

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Limits bound what one runner's whole process tree may use; the runner's cgroup enforces them.
// A zero field is no limit.
type Limits struct {
	MemoryMax int64   // bytes of memory, swap included (no swap beyond it)
	CPUs      float64 // CPU time per wall-clock time: 1.5 is one and a half CPUs
	PidsMax   int     // processes and threads at once
}

// IsZero reports whether l bounds nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// cpuPeriod is the CPU quota's period in microseconds (the kernel's default, 100 ms).
const cpuPeriod = 100000

// applyLimits writes l into a runner's cgroup before anything runs in it. v2 is the runner's
// directory in the cgroup v2 hierarchy ("" when there is none); v1 its directory in each v1
// controller's hierarchy by controller name ("memory", "pids", "cpu"), as on hybrid hosts whose v2
// hierarchy has no controllers. Each limit goes where its controller is: the v2 directory when
// it has the controller's files, else the v1 one. A limit no controller can hold is an error, so
// a runner never runs unbounded while the config says it is bounded.
func applyLimits(v2 string, v1 map[string]string, l Limits) error {
	type write struct{ file, value string }
	for _, c := range []struct {
		key, controller string
		set             bool
		v2, v1          []write
	}{
		{"memory_max", "memory", l.MemoryMax > 0,
			// Swap would let a job hold more than memory_max: v2 allows it none, v1 bounds memory
			// and swap together (memsw, where the kernel accounts swap) at the same figure.
			[]write{{"memory.max", strconv.FormatInt(l.MemoryMax, 10)}, {"memory.swap.max?", "0"}},
			[]write{{"memory.limit_in_bytes", strconv.FormatInt(l.MemoryMax, 10)}, {"memory.memsw.limit_in_bytes?", strconv.FormatInt(l.MemoryMax, 10)}}},
		{"pids_max", "pids", l.PidsMax > 0,
			[]write{{"pids.max", strconv.Itoa(l.PidsMax)}},
			[]write{{"pids.max", strconv.Itoa(l.PidsMax)}}},
		{"cpus", "cpu", l.CPUs > 0,
			[]write{{"cpu.max", fmt.Sprintf("%d %d", cpuQuota(l.CPUs), cpuPeriod)}},
			[]write{{"cpu.cfs_period_us", strconv.Itoa(cpuPeriod)}, {"cpu.cfs_quota_us", strconv.FormatInt(cpuQuota(l.CPUs), 10)}}},
	} {
		if !c.set {
			continue
		}
		dir, writes := v1[c.controller], c.v1
		if v2 != "" && delegate(v2, c.controller) && exists(filepath.Join(v2, strings.TrimSuffix(c.v2[0].file, "?"))) {
			dir, writes = v2, c.v2
		}
		if dir == "" {
			return fmt.Errorf("%s is set but this host has no cgroup %s controller for runners (neither in the cgroup v2 hierarchy nor mounted as v1): enable it (on cgroup v2, delegate it to the daemon's cgroup; under systemd the unit's Delegate=yes does) or remove %s from the config", c.key, c.controller, c.key)
		}
		for _, w := range writes {
			name, optional := strings.CutSuffix(w.file, "?")
			path := filepath.Join(dir, name)
			if optional && !exists(path) {
				continue
			}
			if err := os.WriteFile(path, []byte(w.value), 0); err != nil {
				return fmt.Errorf("set %s of the runner's cgroup (%s = %s): %w", c.key, path, w.value, err)
			}
		}
	}
	return nil
}

// delegate makes v2 controller c available in the runner's cgroup dir, enabling it in the
// cgroup.subtree_control of the runners' directory and of the daemon's own cgroup above it when
// that has it (a systemd unit with Delegate=yes does). It goes no higher: above is the service
// manager's tree. It reports whether dir has c; a hybrid host's empty v2 hierarchy has none.
func delegate(dir, c string) bool {
	if hasController(dir, c) {
		return true
	}
	runners := filepath.Dir(dir)
	for _, d := range []string{filepath.Dir(runners), runners} {
		if hasController(d, c) {
			// EBUSY (the cgroup has processes of its own) leaves c unavailable below: v1 or an error.
			_ = os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+"+c), 0)
		}
	}
	return hasController(dir, c)
}

// hasController reports whether v2 cgroup dir lists c in cgroup.controllers.
func hasController(dir, c string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	return err == nil && slices.Contains(strings.Fields(string(b)), c)
}

// cpuQuota is the quota in microseconds per cpuPeriod for cpus CPUs; the kernel's least is 1 ms.
func cpuQuota(cpus float64) int64 {
	return max(int64(math.Round(cpus*cpuPeriod)), 1000)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// OOMKills is how many processes the kernel killed in a runner's cgroup for going past its memory
// limit: oom_kill of memory.events in its v2 directory when that has one, else of
// memory.oom_control in its v1 memory directory. 0 when neither exists (no memory controller).
func OOMKills(v2 string, v1 map[string]string) (uint64, error) {
	var path string
	switch {
	case v2 != "" && exists(filepath.Join(v2, "memory.events")):
		path = filepath.Join(v2, "memory.events")
	case v1["memory"] != "":
		path = filepath.Join(v1["memory"], "memory.oom_control")
	default:
		return 0, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the runner cgroup's out-of-memory kills: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read the runner cgroup's out-of-memory kills: %s: bad oom_kill %q", path, v)
			}
			return n, nil
		}
	}
	return 0, sc.Err()
}
