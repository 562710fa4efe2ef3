package doctor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/runner-manager/runner-manager/internal/runner"
)

// checkSlotUsers checks the per-slot runner users of slots 0..max_runners-1: each exists, is not
// root, and has a home of its own that only it can read (0700, as useradd and slot hygiene leave
// it: another slot must not read what a job keeps there). --fix makes a home 0700 and creates the
// missing users (runner.SlotUsers.Provision, as `service install` does).
func checkSlotUsers(ctx context.Context, e *Env) []Finding {
	d := e.daemon()
	root := e.Root != "" || e.EUID == 0 // under --root the tree's service runs as root
	if !d.PerSlotRunners(root) {
		return []Finding{{Check: "slot users", Status: Warn,
			Detail: "runners run as the daemon's own user: a job can read its credentials and the state dir",
			Do:     "run the daemon as root and leave daemon.runner_user unset (or \"per-slot\")"}}
	}
	names := &runner.SlotUsers{Prefix: d.RunnerUserPrefix}
	var out, good []Finding
	var missing []string
	for slot := range d.MaxRunners {
		name := names.Name(slot)
		a, err := e.Users.Lookup(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = append(missing, name)
		case err != nil:
			out = append(out, Finding{Check: "slot user", Subject: name, Status: Fail, Detail: e.shown(err.Error())})
		default:
			f := e.checkHome(a)
			if f.Status == OK && f.Fixed == "" {
				good = append(good, f)
			} else {
				out = append(out, f)
			}
		}
	}
	if len(good) > 0 {
		out = append([]Finding{{Check: "slot users", Subject: subjectOf(good), Status: OK,
			Detail: fmt.Sprintf("%d of %d exist, each with a home only it reads (0700)", len(good), d.MaxRunners)}}, out...)
	}
	if len(missing) > 0 {
		out = append(out, e.createUsers(ctx, d.MaxRunners, missing))
	}
	return out
}

func subjectOf(fs []Finding) string {
	if len(fs) == 1 {
		return fs[0].Subject
	}
	return fs[0].Subject + " to " + fs[len(fs)-1].Subject
}

// checkHome checks one slot user's account and home.
func (e *Env) checkHome(a Account) Finding {
	f := Finding{Check: "slot user", Subject: a.Name}
	if a.UID == 0 {
		f.Status, f.Detail = Fail, "has uid 0: a runner user must not be root"
		f.Do = "give it its own uid (usermod -u) or remove it (userdel -r " + a.Name + "); the daemon refuses it"
		return f
	}
	path := e.onDisk(a.Home)
	fi, ok, err := lstat(path)
	switch {
	case err != nil:
		f.Status, f.Detail = Fail, e.shown(err.Error())
		return f
	case !ok:
		f.Status, f.Detail = Fail, "its home "+a.Home+" does not exist: the runner cannot start"
		f.Do = fmt.Sprintf("mkdir -m 0700 %s && chown %s: %s", a.Home, a.Name, a.Home)
		return f
	case !fi.IsDir():
		f.Status, f.Detail = Fail, "its home "+a.Home+" is not a directory (a symlink?)"
		f.Do = "replace it with a directory the user owns, mode 0700"
		return f
	case ownerOf(fi) != a.UID:
		f.Status, f.Detail = Fail, fmt.Sprintf("its home %s is owned by uid %d, not by the user (uid %d)", a.Home, ownerOf(fi), a.UID)
		f.Do = fmt.Sprintf("chown -R %s: %s", a.Name, a.Home)
		return f
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		f.Status, f.Detail = Fail, fmt.Sprintf("its home %s is mode %04o: other slots and local users can read what a job keeps there", a.Home, perm)
		f.Do = "chmod 0700 " + a.Home + " (doctor --fix does)"
		if !e.Fix || !e.chmod(&f, path, a.Home, 0o700) {
			return f
		}
	}
	f.Status, f.Detail = OK, "its home "+a.Home+" is 0700 and its own"
	return f
}

// createUsers reports the missing users and, with --fix, creates them. The daemon, as root,
// creates a slot's user at its first launch, so a missing one is a warning.
func (e *Env) createUsers(ctx context.Context, slots int, missing []string) Finding {
	f := Finding{Check: "slot users", Subject: strings.Join(missing, ", "), Status: Warn,
		Detail: "missing; the daemon (root) creates each at its slot's first launch",
		Do:     "runner-manager doctor --fix (or service install) creates them now"}
	if !e.Fix {
		return f
	}
	if e.CreateUsers == nil {
		f.Detail += "; --fix cannot create them here (the tree's users are not this host's, or not root)"
		f.Do = fmt.Sprintf("useradd --system --user-group --create-home --shell /usr/sbin/nologin %s (for each), then chmod 0700 its home", missing[0])
		return f
	}
	created, err := e.CreateUsers(ctx, slots)
	if len(created) > 0 {
		f.Fixed = "created " + strings.Join(created, ", ")
	}
	if err != nil {
		f.Status, f.Detail = Fail, "--fix could not create them: "+err.Error()
		return f
	}
	f.Status, f.Detail, f.Do = OK, "created, each with a home only it reads (0700)", ""
	return f
}

// HostUsers looks accounts up as the daemon does (os/user).
type HostUsers struct{}

func (HostUsers) Lookup(name string) (Account, error) {
	u, err := user.Lookup(name)
	if errors.As(err, new(user.UnknownUserError)) {
		return Account{}, fmt.Errorf("user %s: %w", name, fs.ErrNotExist)
	}
	if err != nil {
		return Account{}, err
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return Account{}, fmt.Errorf("user %s: uid %q: %w", name, u.Uid, err)
	}
	return Account{Name: name, UID: uid, Home: u.HomeDir}, nil
}

// PasswdFile looks accounts up in a passwd file: a tree's etc/passwd under --root.
type PasswdFile string

func (p PasswdFile) Lookup(name string) (Account, error) {
	f, err := os.Open(string(p))
	if errors.Is(err, fs.ErrNotExist) {
		return Account{}, fmt.Errorf("user %s: %w", name, err)
	}
	if err != nil {
		return Account{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 7 || fields[0] != name {
			continue
		}
		uid, err := strconv.Atoi(fields[2])
		if err != nil {
			return Account{}, fmt.Errorf("%s: user %s has uid %q: %w", p, name, fields[2], err)
		}
		return Account{Name: name, UID: uid, Home: fields[5]}, nil
	}
	if err := sc.Err(); err != nil {
		return Account{}, err
	}
	return Account{}, fmt.Errorf("user %s: %w", name, fs.ErrNotExist)
}
