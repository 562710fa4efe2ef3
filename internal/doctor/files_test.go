package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

func TestCheckConfig(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status Status
		do     string
	}{
		{"valid", nil, OK, ""},
		{"missing", fmt.Errorf("read: %w", fs.ErrNotExist), Warn, "config init"},
		{"invalid", &config.Error{Problems: []config.Problem{{Message: "x"}}}, Fail, "runner-manager validate --config"},
		{"unreadable", errors.New("permission denied"), Fail, "readable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := treeEnv(t, nil)
			e.ConfigErr = tt.err
			f := checkConfig(t.Context(), e)[0]
			if f.Status != tt.status || !strings.Contains(f.Do, tt.do) {
				t.Errorf("got %+v, want %s with do %q", f, tt.status, tt.do)
			}
		})
	}
}

// TestCheckSecretFiles applies the validate rule; --fix repairs a mode others may read or write,
// and only that.
func TestCheckSecretFiles(t *testing.T) {
	tests := []struct {
		name   string
		mode   os.FileMode // 0: no file
		dir    bool
		link   bool // the setting names a link to the file
		fix    bool
		status Status
		mode2  os.FileMode
	}{
		{name: "private", mode: 0o600, status: OK},
		{name: "group readable warns, never fixed", mode: 0o640, fix: true, status: Warn, mode2: 0o640},
		{name: "world readable", mode: 0o644, status: Fail, mode2: 0o644},
		{name: "world readable fixed", mode: 0o644, fix: true, status: OK, mode2: 0o600},
		{name: "group writable fixed", mode: 0o620, fix: true, status: OK, mode2: 0o600},
		{name: "missing", status: Fail},
		{name: "directory is not fixed", dir: true, mode: 0o755, fix: true, status: Fail, mode2: 0o755},
		{name: "a link is not followed by --fix", link: true, mode: 0o644, fix: true, status: Fail, mode2: 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := treeEnv(t, &config.Config{GitHub: config.GitHub{TokenFile: "/etc/runner-manager/token"}})
			e.Fix = tt.fix
			var p string
			switch {
			case tt.dir:
				p = mkdir(t, e, "/etc/runner-manager/token", tt.mode)
			case tt.link:
				p = write(t, e, "/etc/passwd", "root:x:0:0::/root:/bin/sh\n", tt.mode)
				mkdir(t, e, "/etc/runner-manager", 0o755)
				if err := os.Symlink(p, e.onDisk("/etc/runner-manager/token")); err != nil {
					t.Fatal(err)
				}
			case tt.mode != 0:
				p = write(t, e, "/etc/runner-manager/token", "ghp_secret", tt.mode)
			}
			f := checkSecretFiles(t.Context(), e)[0]
			if f.Status != tt.status {
				t.Fatalf("got %+v, want %s", f, tt.status)
			}
			if strings.Contains(f.Detail, e.Root) || strings.Contains(f.Detail, "ghp_secret") {
				t.Errorf("detail names the tree or the secret: %q", f.Detail)
			}
			if tt.mode2 != 0 && mode(t, p) != tt.mode2 {
				t.Errorf("mode after: %04o, want %04o", mode(t, p), tt.mode2)
			}
			if fixed := f.Fixed != ""; fixed != (tt.fix && tt.mode2 == 0o600) {
				t.Errorf("fixed = %q", f.Fixed)
			}
		})
	}
}

// TestCheckStateDirs checks the state dir, the cache and the runtime root as the daemon makes them.
func TestCheckStateDirs(t *testing.T) {
	const state = "/var/lib/runner-manager"
	tests := []struct {
		name     string
		setup    func(t *testing.T, e *Env)
		fix      bool
		want     []Status // state dir, cache, runtime root
		wantMode map[string]os.FileMode
	}{
		{name: "absent: the daemon makes them", want: []Status{OK, OK, OK}},
		{name: "as the daemon makes them", setup: func(t *testing.T, e *Env) {
			mkdir(t, e, state+"/cache", 0o755)
			mkdir(t, e, state, 0o700)
			mkdir(t, e, state+"-runners", 0o711)
		}, want: []Status{OK, OK, OK}},
		{name: "open state dir fails", setup: func(t *testing.T, e *Env) {
			mkdir(t, e, state, 0o755)
			mkdir(t, e, state+"-runners", 0o755)
		}, want: []Status{Fail, OK, Warn}},
		{name: "fix sets the modes", fix: true, setup: func(t *testing.T, e *Env) {
			mkdir(t, e, state+"/cache", 0o777)
			mkdir(t, e, state, 0o750)
			mkdir(t, e, state+"-runners", 0o733)
		}, want: []Status{OK, OK, OK}, wantMode: map[string]os.FileMode{state: 0o700, state + "/cache": 0o755, state + "-runners": 0o711}},
		{name: "a symlink fails and is not fixed", fix: true, setup: func(t *testing.T, e *Env) {
			target := mkdir(t, e, "/elsewhere", 0o700)
			mkdir(t, e, "/var/lib", 0o755)
			if err := os.Symlink(target, e.onDisk(state)); err != nil {
				t.Fatal(err)
			}
		}, want: []Status{Fail, OK, OK}},
		{name: "a file fails", setup: func(t *testing.T, e *Env) { write(t, e, state+"-runners", "", 0o600) },
			want: []Status{OK, OK, Fail}},
		{name: "owned by another user fails and is not fixed", fix: true, setup: func(t *testing.T, e *Env) {
			livetest.Root(t, "chown")
			if err := os.Chown(mkdir(t, e, state, 0o755), 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}, want: []Status{Fail, OK, OK}, wantMode: map[string]os.FileMode{state: 0o755}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := treeEnv(t, nil)
			e.Fix = tt.fix
			if tt.setup != nil {
				tt.setup(t, e)
			}
			fs := checkStateDirs(t.Context(), e)
			for i, f := range fs {
				if f.Status != tt.want[i] {
					t.Errorf("%s: got %+v, want %s", f.Check, f, tt.want[i])
				}
				if f.Status != OK && f.Do == "" {
					t.Errorf("%s: %s without what to do", f.Check, f.Status)
				}
			}
			for p, m := range tt.wantMode {
				if got := mode(t, e.onDisk(p)); got != m {
					t.Errorf("%s is %04o, want %04o", p, got, m)
				}
			}
		})
	}
}

func TestOnDiskKeepsAPathInTheTree(t *testing.T) {
	e := &Env{Root: "/srv/tree"}
	for in, want := range map[string]string{"/etc/x": "/srv/tree/etc/x", "/srv/tree/etc/x": "/srv/tree/etc/x", "/srv/treeish": "/srv/tree/srv/treeish"} {
		if got := e.onDisk(in); got != want {
			t.Errorf("onDisk(%s) = %s, want %s", in, got, want)
		}
	}
	if got := (&Env{}).onDisk("/etc/x"); got != "/etc/x" {
		t.Errorf("without a root: %s", got)
	}
}
