package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKillable runs the cgroup.kill check on fake cgroup trees: the nearest existing cgroup
// decides; a hierarchy's root has neither cgroup.kill nor cgroup.type.
func TestKillable(t *testing.T) {
	tests := []struct {
		name  string
		files []string // relative to the tree; "x/cgroup.procs" makes x a cgroup
		dir   string   // asked for, relative
		found string   // "" when an error is wanted
		err   string
	}{
		{"runners exist, killable", []string{"cgroup.procs", "svc/cgroup.procs", "svc/cgroup.type", "svc/cgroup.kill", "svc/runners/cgroup.procs", "svc/runners/cgroup.type", "svc/runners/cgroup.kill"}, "svc/runners", "svc/runners", ""},
		{"not created yet: its parent", []string{"cgroup.procs", "svc/cgroup.procs", "svc/cgroup.type", "svc/cgroup.kill"}, "svc/runners", "svc", ""},
		{"an old kernel", []string{"cgroup.procs", "svc/cgroup.procs", "svc/cgroup.type"}, "svc/runners", "", "has no cgroup.kill"},
		{"the root cgroup", []string{"cgroup.procs"}, "runner-manager/runners", ".", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range tt.files {
				p := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := killable(filepath.Join(root, tt.dir))
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("killable = %q, %v; want an error with %q", got, err, tt.err)
			case tt.err == "" && (err != nil || got != filepath.Join(root, tt.found)):
				t.Errorf("killable = %q, %v; want %s", got, err, filepath.Join(root, tt.found))
			}
		})
	}
}
