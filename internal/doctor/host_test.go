package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/config"
)

func TestCheckCgroups(t *testing.T) {
	tests := []struct {
		name   string
		root   bool
		probe  func() (string, error)
		status Status
	}{
		{"usable", false, func() (string, error) { return "/sys/fs/cgroup/system.slice/x", nil }, OK},
		{"none", false, func() (string, error) { return "", errors.New("no cgroup2 filesystem") }, Warn},
		{"not asked under --root", true, func() (string, error) { panic("probed the host for a tree") }, Skip},
		{"no probe on this platform", false, nil, Skip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Env{Cgroups: tt.probe}
			if tt.root {
				e.Root = t.TempDir()
			}
			f := checkCgroups(t.Context(), e)[0]
			if f.Status != tt.status || f.Status == Warn && f.Do == "" {
				t.Errorf("got %+v, want %s", f, tt.status)
			}
		})
	}
}

func TestCheckDockerSaysThereAreNoContainerTargets(t *testing.T) {
	f := checkDocker(t.Context(), &Env{})[0]
	if f.Status != Skip || !strings.Contains(f.Detail, "no container targets") {
		t.Errorf("got %+v", f)
	}
}

// TestCheckFreeDisk measures the state dir's filesystem, or its nearest existing parent's.
func TestCheckFreeDisk(t *testing.T) {
	tests := []struct {
		name   string
		exists bool
		free   uint64
		min    *uint64 // daemon.min_free_disk; nil: its default
		err    error
		status Status
		detail string
	}{
		{name: "plenty", exists: true, free: 5 << 30, status: OK, detail: "5.0 GiB free"},
		{name: "below the bound", exists: true, free: 300 << 20, status: Fail, detail: "300.0 MiB free, less than 1.0 GiB"},
		{name: "not created yet: its parent", free: 2 << 30, status: OK, detail: "2.0 GiB free"},
		{name: "below the config's bound", exists: true, min: ptr(8 << 30), free: 5 << 30, status: Fail, detail: "5.0 GiB free, less than 8.0 GiB"},
		{name: "no bound configured, low", exists: true, min: ptr(0), free: 100 << 20, status: Warn, detail: "min_free_disk = 0"},
		{name: "statfs fails", exists: true, err: errors.New("input/output error"), status: Fail, detail: "input/output error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := config.Daemon{StateDir: config.DefaultStateDir, MaxRunners: 1, MinFreeDisk: config.DefaultMinFreeDisk}
			if tt.min != nil {
				d.MinFreeDisk = config.ByteSize(*tt.min)
			}
			e := treeEnv(t, &config.Config{Daemon: d})
			if tt.exists {
				mkdir(t, e, "/var/lib/runner-manager", 0o700)
			} else {
				mkdir(t, e, "/var/lib", 0o755)
			}
			var asked []string
			e.FreeBytes = func(p string) (uint64, error) {
				asked = append(asked, p)
				if _, err := os.Stat(p); err != nil {
					return 0, fmt.Errorf("statfs: %w", fs.ErrNotExist)
				}
				return tt.free, tt.err
			}
			f := checkFreeDisk(t.Context(), e)[0]
			if f.Status != tt.status || !strings.Contains(f.Detail, tt.detail) {
				t.Errorf("got %+v, want %s with %q (asked %v)", f, tt.status, tt.detail, asked)
			}
		})
	}
}

// TestStatfsFree measures a real filesystem, and a missing path is fs.ErrNotExist, which
// checkFreeDisk follows up to the nearest existing parent.
func TestStatfsFree(t *testing.T) {
	if free, err := StatfsFree(t.TempDir()); err != nil || free == 0 {
		t.Errorf("StatfsFree(temp dir) = %d, %v", free, err)
	}
	if _, err := StatfsFree(t.TempDir() + "/absent"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("StatfsFree(absent) = %v, want fs.ErrNotExist", err)
	}
}

func ptr(n uint64) *uint64 { return &n }
