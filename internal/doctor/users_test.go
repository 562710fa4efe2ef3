package doctor

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/livetest"
	"github.com/runner-manager/runner-manager/internal/runner"
	"github.com/runner-manager/runner-manager/internal/runner/runnerusertest"
)

func TestPasswdFile(t *testing.T) {
	e := treeEnv(t, nil)
	write(t, e, "/etc/passwd", "root:x:0:0:root:/root:/bin/bash\nr0:x:990:990::/home/r0:/usr/sbin/nologin\nbad:x:zz:1::/:/bin/sh\n", 0o644)
	db := PasswdFile(e.onDisk("/etc/passwd"))
	if a, err := db.Lookup("r0"); err != nil || a != (Account{Name: "r0", UID: 990, Home: "/home/r0"}) {
		t.Errorf("r0 = %+v, %v", a, err)
	}
	if _, err := db.Lookup("r1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("r1: %v, want not exist", err)
	}
	if _, err := db.Lookup("bad"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("bad uid: %v, want an error", err)
	}
	if _, err := PasswdFile(e.onDisk("/nowhere")).Lookup("r0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no passwd file: %v, want not exist", err)
	}
}

// TestCheckSlotUsers runs the slot-user check against a tree's passwd: homes 0700 and their own,
// missing users a warning that --fix cannot repair in a tree, uid 0 refused.
func TestCheckSlotUsers(t *testing.T) {
	me := os.Geteuid() // the users' uid: a test that is not root owns the homes it makes
	if me == 0 {
		me = 4242
	}
	line := func(name string, uid int) string {
		return name + ":x:" + strconv.Itoa(uid) + ":" + strconv.Itoa(uid) + "::/home/" + name + ":/usr/sbin/nologin\n"
	}
	tests := []struct {
		name      string
		passwd    string
		homes     map[string]os.FileMode
		runnerUsr string
		fix       bool
		want      []Status
		wantMode  map[string]os.FileMode
		wantFixed string
	}{
		{name: "both fine", passwd: line("r0", me) + line("r1", me), homes: map[string]os.FileMode{"r0": 0o700, "r1": 0o700}, want: []Status{OK}},
		{name: "open home fails", passwd: line("r0", me) + line("r1", me), homes: map[string]os.FileMode{"r0": 0o700, "r1": 0o755}, want: []Status{OK, Fail}},
		{name: "open home fixed", fix: true, passwd: line("r0", me) + line("r1", me), homes: map[string]os.FileMode{"r0": 0o700, "r1": 0o755},
			want: []Status{OK, OK}, wantMode: map[string]os.FileMode{"r1": 0o700}, wantFixed: "chmod 0700 /home/r1"},
		{name: "missing home", passwd: line("r0", me) + line("r1", me), homes: map[string]os.FileMode{"r0": 0o700}, want: []Status{OK, Fail}},
		{name: "missing user warns", passwd: line("r0", me), homes: map[string]os.FileMode{"r0": 0o700}, want: []Status{OK, Warn}},
		{name: "missing user not created in a tree", fix: true, passwd: line("r0", me), homes: map[string]os.FileMode{"r0": 0o700}, want: []Status{OK, Warn}},
		{name: "root as a runner user", passwd: line("r0", 0) + line("r1", me), homes: map[string]os.FileMode{"r0": 0o700, "r1": 0o700}, want: []Status{OK, Fail}},
		{name: "runners as the daemon", runnerUsr: config.RunnerUserDaemon, want: []Status{Warn}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := treeEnv(t, &config.Config{Daemon: config.Daemon{StateDir: "/var/lib/runner-manager", MaxRunners: 2, RunnerUserPrefix: "r", RunnerUser: tt.runnerUsr}})
			e.Fix = tt.fix
			write(t, e, "/etc/passwd", tt.passwd, 0o644)
			for name, m := range tt.homes {
				if err := os.Lchown(mkdir(t, e, "/home/"+name, m), me, me); err != nil {
					t.Fatal(err)
				}
			}
			fs := checkSlotUsers(t.Context(), e)
			var got []Status
			for _, f := range fs {
				got = append(got, f.Status)
				if f.Status != OK && f.Do == "" {
					t.Errorf("%+v: no what to do", f)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v: %+v", got, tt.want, fs)
			}
			for name, m := range tt.wantMode {
				if got := mode(t, e.onDisk("/home/"+name)); got != m {
					t.Errorf("home of %s is %04o, want %04o", name, got, m)
				}
			}
			if tt.wantFixed != "" && !slices.ContainsFunc(fs, func(f Finding) bool { return f.Fixed == tt.wantFixed }) {
				t.Errorf("no finding says %q: %+v", tt.wantFixed, fs)
			}
		})
	}
}

// TestFixCreatesMissingSlotUsers runs the check on this host: --fix creates the missing users with
// the runner package's own code (as service install does), each with a 0700 home.
func TestFixCreatesMissingSlotUsers(t *testing.T) {
	livetest.Root(t, "creating runner users")
	users := &runner.SlotUsers{Prefix: runnerusertest.Prefix()}
	e := &Env{EUID: os.Geteuid(), Users: HostUsers{}, Fix: true, CreateUsers: users.Provision,
		Config: &config.Config{Daemon: config.Daemon{StateDir: t.TempDir(), MaxRunners: 2, RunnerUserPrefix: users.Prefix}}}
	fs := checkSlotUsers(t.Context(), e)
	if len(fs) != 1 || fs[0].Status != OK || fs[0].Fixed != "created "+users.Name(0)+", "+users.Name(1) {
		t.Fatalf("got %+v, want both created", fs)
	}
	for slot := range 2 {
		u, err := user.Lookup(users.Name(slot))
		if err != nil {
			t.Fatal(err)
		}
		if m := mode(t, u.HomeDir); m != 0o700 {
			t.Errorf("%s's home is %04o, want 0700", u.Username, m)
		}
	}
	e.Fix = false
	if fs := checkSlotUsers(t.Context(), e); len(fs) != 1 || fs[0].Status != OK || !strings.Contains(fs[0].Detail, "2 of 2") {
		t.Errorf("after --fix: %+v, want both fine", fs)
	}
}
