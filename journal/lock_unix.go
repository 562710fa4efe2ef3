//go:build unix

package journal

import (
	"errors"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockConflict reports whether pebble's lock attempt failed because another process holds the
// POSIX record lock on <dir>/LOCK (fcntl F_SETLK returns EAGAIN or EACCES).
func lockConflict(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES)
}

// lockHolder asks the kernel (F_GETLK) which process holds <dir>/LOCK, or returns 0. It is only
// called after a refusal, when this process holds no lock on the file: closing another fd on a
// file whose POSIX lock we hold would silently drop that lock.
func lockHolder(dir string) int {
	f, err := os.Open(filepath.Join(dir, "LOCK"))
	if err != nil {
		return 0
	}
	defer f.Close()
	spec := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &spec); err != nil || spec.Type == unix.F_UNLCK {
		return 0
	}
	return int(spec.Pid)
}
