package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/runner"
)

// checkConfig reports whether the config loads (offline: the secret files are checked on their own).
func checkConfig(_ context.Context, e *Env) []Finding {
	f := Finding{Check: "config", Subject: e.ConfigPath}
	var cerr *config.Error
	switch err := e.ConfigErr; {
	case err == nil:
		f.Status, f.Detail = OK, "valid"
	case errors.Is(err, fs.ErrNotExist):
		f.Status, f.Detail = Warn, "does not exist; the rest is checked against the defaults"
		f.Do = "write it: runner-manager config init --config " + e.ConfigPath
	case errors.As(err, &cerr):
		f.Status, f.Detail = Fail, fmt.Sprintf("invalid (%d problems); the rest is checked against the defaults", len(cerr.Problems))
		f.Do = "runner-manager validate --config " + e.ConfigPath + " lists them"
	default:
		f.Status, f.Detail = Fail, e.shown(err.Error())
		f.Do = "make it readable by root"
	}
	return []Finding{f}
}

// checkSecretFiles applies config.CheckSecretFile, the daemon's own rule, to every credential
// file the config names. --fix makes a file others may read or write 0600: only a mode changes.
func checkSecretFiles(_ context.Context, e *Env) []Finding {
	if e.Config == nil {
		return nil
	}
	var out []Finding
	for _, s := range e.Config.SecretFiles() {
		path := e.onDisk(s.Path)
		f := Finding{Check: "secret file", Subject: s.Key}
		warning, err := config.CheckSecretFile(path)
		if err != nil && e.Fix && modeProblem(path) && e.chmod(&f, path, e.shown(path), 0o600) {
			warning, err = config.CheckSecretFile(path)
		}
		switch {
		case err != nil:
			f.Status, f.Detail = Fail, e.shown(err.Error())+f.Detail
			if modeProblem(path) {
				f.Do = "chmod 0600 " + e.shown(path) + " (doctor --fix does)"
			}
		case warning != "":
			f.Status, f.Detail = Warn, e.shown(warning)
		default:
			f.Status, f.Detail = OK, e.shown(path)+": a regular file only its owner reads"
		}
		out = append(out, f)
	}
	return out
}

// modeProblem reports whether path is a regular file whose only fault is that others may read or
// write it: what chmod 0600 repairs without touching anything else. A symlink is not followed:
// --fix must not be led to chmod whatever file a link names.
func modeProblem(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o026 != 0
}

// dirRule is what the daemon expects of one of its directories.
type dirRule struct {
	check   string
	path    string // as the host sees it
	want    fs.FileMode
	mustNot fs.FileMode // bits that make the directory unsafe (fail); other differences from want warn
	why     string      // why want, for the finding
	absent  string      // what a missing directory means
}

// checkStateDirs checks the state dir (0700: journal, credentials, tokens), the runner package
// cache in it and the runtime root beside it (0711: slot users pass through to their own
// directories) as the daemon creates them: owned by root (or the daemon's user), not a symlink,
// not writable by others. --fix sets the mode; ownership is left to the operator.
func checkStateDirs(_ context.Context, e *Env) []Finding {
	state := e.daemon().StateDir
	rules := []dirRule{
		{check: "state dir", path: state, want: 0o700, mustNot: 0o077, why: "it holds the journal and credentials",
			absent: "the daemon creates it (0700) at start"},
		{check: "package cache", path: filepath.Join(state, "cache"), want: 0o755, mustNot: 0o022, why: "runners run the packages it holds",
			absent: "the daemon creates it at its first download"},
		{check: "runtime root", path: runner.RuntimeRootFor(state), want: 0o711, mustNot: 0o022, why: "slot users pass through it to their own directories, and nobody else lists it",
			absent: "the daemon creates it (0711) at start"},
	}
	out := make([]Finding, 0, len(rules))
	for _, r := range rules {
		out = append(out, e.checkDir(r))
	}
	return out
}

func (e *Env) checkDir(r dirRule) Finding {
	f := Finding{Check: r.check, Subject: r.path}
	path := e.onDisk(r.path)
	fi, ok, err := lstat(path)
	switch {
	case err != nil:
		f.Status, f.Detail = Fail, e.shown(err.Error())
		return f
	case !ok:
		f.Status, f.Detail = OK, "absent; "+r.absent
		return f
	case fi.Mode()&fs.ModeSymlink != 0:
		f.Status, f.Detail = Fail, "is a symlink: whoever can repoint it chooses where root writes"
		f.Do = "replace it with a directory owned by root"
		return f
	case !fi.IsDir():
		f.Status, f.Detail = Fail, "is not a directory"
		f.Do = "move it aside; the daemon creates the directory"
		return f
	}
	if decided, err := aclProblem(path); decided {
		f.Status, f.Detail = OK, "only SYSTEM, Administrators, TrustedInstaller and the daemon's account can change it"
		if err != nil {
			f.Status, f.Detail, f.Do = Fail, e.shown(err.Error()), aclFix(r.path)
		}
		return f
	}
	if uid := ownerOf(fi); uid != 0 && uid != e.EUID {
		f.Status, f.Detail = Fail, fmt.Sprintf("is owned by uid %d: its owner can change what the daemon reads there", uid)
		f.Do = "chown root:root " + r.path
		return f
	}
	perm := fi.Mode().Perm()
	if perm == r.want {
		f.Status, f.Detail = OK, fmt.Sprintf("mode %04o, owned by %s", perm, ownerName(ownerOf(fi)))
		return f
	}
	f.Status = Warn
	if perm&r.mustNot != 0 {
		f.Status = Fail
	}
	f.Detail = fmt.Sprintf("mode %04o, want %04o: %s", perm, r.want, r.why)
	f.Do = fmt.Sprintf("chmod %04o %s (doctor --fix does)", r.want, r.path)
	if e.Fix && e.chmod(&f, path, r.path, r.want) {
		f.Status, f.Detail = OK, fmt.Sprintf("mode %04o (was %04o), owned by %s", r.want, perm, ownerName(ownerOf(fi)))
	}
	return f
}

// chmod is --fix's one repair: it sets path (name, as the host sees it) to want and says so in f.
func (e *Env) chmod(f *Finding, path, name string, want fs.FileMode) bool {
	if err := os.Chmod(path, want); err != nil {
		f.Detail += "; --fix failed: " + e.shown(err.Error())
		return false
	}
	f.Do, f.Fixed = "", fmt.Sprintf("chmod %04o %s", want, name)
	return true
}

func ownerName(uid int) string {
	if uid == 0 {
		return "root"
	}
	return fmt.Sprintf("the daemon's user (uid %d)", uid)
}
