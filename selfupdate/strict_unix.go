//go:build unix

package selfupdate

import (
	"fmt"
	"io/fs"
	"syscall"
)

func sourceFix(string) string {
	return "only root (or the daemon's user) may be able to change it: chown root and chmod go-w the file and the directories above it"
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
