package selfupdate

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckSource refuses a source binary that anyone but root or the daemon's own user could have
// changed, as sshd's StrictModes refuses a key file: the file and every directory above it (of the
// path as given and, through symlinks, of the file it resolves to) must pass checkEntry. On unix
// (strict_unix.go) each must be owned by root or by euid, and writable by neither group nor others;
// a directory writable by others is accepted only with the sticky bit (as /tmp), where no other
// user can rename or remove an entry it does not own; the entry below it must then pass itself. On
// Windows (strict_windows.go) each must be owned by, and changeable only by, SYSTEM,
// Administrators, TrustedInstaller or the service's account (internal/fileacl; euid is unused). A
// refused candidate is never executed: the daemon, root or LocalSystem, would otherwise run a
// stranger's `--version` and install it.
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
			return fmt.Errorf("source binary %s is refused: %w; %s", path, err, sourceFix(p))
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
