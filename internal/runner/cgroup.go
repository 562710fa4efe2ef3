package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// cgroupPaths are the directories of one runner's cgroup: V2 in the cgroup v2 hierarchy (it
// tracks and kills the runner's whole tree through cgroup.kill), and, on a hybrid host (v1
// controllers beside an empty v2), V1 maps a v1 controller ("memory", "pids", "cpu") to the
// runner's directory in that controller's hierarchy, which the runner process joins too so v1
// limits bound its whole tree. Limits are written here between create and start (limitHook).
type cgroupPaths struct {
	V2 string
	V1 map[string]string
}

// v1Controllers are the v1 hierarchies a runner joins on a hybrid host: the ones its limits use.
var v1Controllers = []string{"memory", "pids", "cpu"}

// cgroupLayout is where this daemon's runner cgroups live, computed once at start from
// /proc/self/mountinfo and /proc/self/cgroup (newCgroupLayout).
type cgroupLayout struct {
	// Runners is the v2 directory holding one cgroup per runner, named by attempt id.
	Runners string
	// Leaf is the v2 directory the daemon moves itself into before creating Runners, so its own
	// cgroup holds no process beside child cgroups ("no internal processes" on pure v2); "" when
	// the daemon's cgroup is the hierarchy root, which that rule exempts.
	Leaf string
	// V1Runners maps a v1 controller to the directory holding the runners' cgroups there.
	V1Runners map[string]string
}

// Names under the daemon's own cgroup (docs/runner-processes.md, "cgroups").
const (
	cgroupRunnersDir = "runners"
	cgroupDaemonLeaf = "daemon"
	// cgroupRootSubtree is the daemon's own subtree when it lives in a hierarchy's root cgroup
	// (a host without systemd): runner cgroups are never made at a hierarchy root itself.
	cgroupRootSubtree = "runner-manager"
)

// paths is the runner cgroup of attempt id.
func (l cgroupLayout) paths(id string) cgroupPaths {
	p := cgroupPaths{V2: filepath.Join(l.Runners, id)}
	for c, dir := range l.V1Runners {
		if p.V1 == nil {
			p.V1 = map[string]string{}
		}
		p.V1[c] = filepath.Join(dir, id)
	}
	return p
}

// mount is one cgroup filesystem as /proc/self/mountinfo lists it.
type mount struct {
	Root, Point string // the mounted subtree of the hierarchy, and where it is mounted
	V2          bool
	Controllers []string // v1: the controllers of the hierarchy (from the super options)
}

// parseMountinfo lists the cgroup and cgroup2 mounts of a mountinfo file (proc(5)): fields
// "id parent major:minor root mountpoint options [optional...] - fstype source superoptions".
func parseMountinfo(data []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := slices.Index(f, "-")
		if sep < 5 || len(f) < sep+3 {
			continue
		}
		m := mount{Root: unescapeMount(f[3]), Point: unescapeMount(f[4])}
		switch f[sep+1] {
		case "cgroup2":
			m.V2 = true
		case "cgroup":
			for _, o := range strings.Split(f[sep+3], ",") {
				if slices.Contains(v1Controllers, o) {
					m.Controllers = append(m.Controllers, o)
				}
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline and backslash.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// procCgroups is /proc/self/cgroup: the v2 path ("0::/path") and each v1 controller's path.
type procCgroups struct {
	V2    string
	HasV2 bool
	V1    map[string]string
}

func parseProcCgroup(data []byte) procCgroups {
	p := procCgroups{V1: map[string]string{}}
	for _, line := range strings.Split(string(data), "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		ctrls, pth, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if id == "0" && ctrls == "" {
			p.V2, p.HasV2 = pth, true
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			p.V1[c] = pth
		}
	}
	return p
}

// newCgroupLayout computes where runner cgroups go, from the daemon's mounts and own cgroups. The
// v2 mount must be one whose root is an ancestor of the daemon's cgroup (a cgroup namespace or a
// bind mount of a subtree shows a non-"/" root). A daemon that already moved into its leaf (an
// upgrade re-executes in place) reads its leaf as its cgroup: the leaf's parent is its own.
// isCgroup2 confirms a mount point really is cgroup2 now (a mount may be hidden under another).
func newCgroupLayout(mountinfo, self []byte, isCgroup2 func(dir string) bool) (cgroupLayout, error) {
	mounts, own := parseMountinfo(mountinfo), parseProcCgroup(self)
	if !own.HasV2 {
		return cgroupLayout{}, fmt.Errorf("/proc/self/cgroup has no cgroup v2 entry (0::/...): this kernel has no unified hierarchy")
	}
	var l cgroupLayout
	dir, ok := "", false
	for _, m := range mounts {
		if m.V2 && isCgroup2(m.Point) {
			if dir, ok = within(m, own.V2); ok {
				break
			}
		}
	}
	if !ok {
		return cgroupLayout{}, fmt.Errorf("no cgroup2 filesystem is mounted where this process's cgroup %q can be reached (mount one, e.g. `mount -t cgroup2 none /sys/fs/cgroup/unified`)", own.V2)
	}
	if isRootCgroup(own.V2) {
		l.Runners = filepath.Join(dir, cgroupRootSubtree, cgroupRunnersDir)
	} else {
		base := strings.TrimSuffix(dir, "/"+cgroupDaemonLeaf)
		l.Runners, l.Leaf = filepath.Join(base, cgroupRunnersDir), filepath.Join(base, cgroupDaemonLeaf)
	}
	for c, d := range v1Dirs(mounts, own) {
		if l.V1Runners == nil {
			l.V1Runners = map[string]string{}
		}
		if isRootCgroup(own.V1[c]) {
			d = filepath.Join(d, cgroupRootSubtree)
		}
		l.V1Runners[c] = filepath.Join(d, cgroupRunnersDir)
	}
	return l, nil
}

// v1Dirs maps each v1 controller runners join (v1Controllers) to the directory of the cgroup
// own names for it, where a v1 hierarchy holding that controller is mounted.
func v1Dirs(mounts []mount, own procCgroups) map[string]string {
	out := map[string]string{}
	for _, c := range v1Controllers {
		p, ok := own.V1[c]
		if !ok {
			continue
		}
		for _, m := range mounts {
			if m.V2 || !slices.Contains(m.Controllers, c) {
				continue
			}
			if d, ok := within(m, p); ok {
				out[c] = d
				break
			}
		}
	}
	return out
}

// isRootCgroup: p is a hierarchy's root cgroup, where runner cgroups get a subtree of their own.
func isRootCgroup(p string) bool { return path.Clean(p) == "/" }

// within is the directory of cgroup path p below mount m, if m's subtree holds it.
func within(m mount, p string) (string, bool) {
	rel, ok := strings.CutPrefix(path.Clean(p), path.Clean(m.Root))
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/") && m.Root != "/") {
		return "", false
	}
	return filepath.Join(m.Point, rel), true
}
