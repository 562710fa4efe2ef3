//go:build unix

package selfupdate

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CheckSource refuses a source binary that anyone but root or the daemon's own user could have
// changed, as sshd's StrictModes refuses a key file: the file and every directory above it (of the
// path as given and, through symlinks, of the file it resolves to) must be owned by root or by
// euid, and writable by neither group nor others. A directory writable by others is accepted only
// with the sticky bit (as /tmp), where no other user can rename or remove an entry it does not own;
// the entry below it must then pass itself. A refused candidate is never executed: the daemon,
// root under the shipped unit, would otherwise run a stranger's `--version` and install it.
func CheckSource(path string, euid int) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("source binary %s: %w", path, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("source binary %s: %w", path, err)
	}
	for _, p := range []string{abs, resolved} {
		if err := checkChain(p, euid); err != nil {
			return fmt.Errorf("source binary %s is refused: %w; only root (or the daemon's user) may be able to change it: chown root and chmod go-w the file and the directories above it", path, err)
		}
	}
	return nil
}

// checkChain checks p (not following a final symlink: the link itself is what a writer swaps) and
// every ancestor up to the root.
func checkChain(p string, euid int) error {
	for {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if err := checkEntry(p, fi, euid); err != nil {
			return err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}

func checkEntry(p string, fi fs.FileInfo, euid int) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: cannot read its owner", p)
	}
	if uid := int(st.Uid); uid != 0 && uid != euid {
		return fmt.Errorf("%s is owned by uid %d", p, uid)
	}
	perm := fi.Mode().Perm()
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil // a symlink's own mode means nothing; its directory decides who can swap it
	}
	if perm&0o022 == 0 {
		return nil
	}
	if fi.IsDir() && fi.Mode()&fs.ModeSticky != 0 {
		return nil
	}
	return fmt.Errorf("%s is writable by its group or others (mode %04o)", p, perm)
}
