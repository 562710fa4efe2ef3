//go:build linux || darwin

package runner

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// scrubFiles removes every file in u's home and u's files in the OS's scratch directories, and
// makes u's home 0700 again (scrubUser's part that Linux and macOS share).
func scrubFiles(u User) error {
	var errs []error
	if u.Home != "" && u.Home != "/" {
		errs = append(errs, homeMode(u.Home, u.UID), removeOwned(u.Home, u.UID, true))
	}
	for _, d := range scratchDirs {
		errs = append(errs, removeOwned(d, u.UID, false))
	}
	return errors.Join(errs...)
}

// dirFlags open a directory without following a link in its last component: a job may have
// swapped any directory it owns for a link by the time it is opened.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// homeMode makes home 0700 when uid owns it (useradd leaves Debian homes 0755, and a job may
// chmod its own home): other slots and local users must not read what a job keeps there.
func homeMode(home string, uid uint32) error {
	fd, st, err := openDir(unix.AT_FDCWD, home, home)
	if fd < 0 || err != nil {
		return err
	}
	defer unix.Close(fd)
	if st.Uid != uid || st.Mode&0o7777 == 0o700 {
		return nil
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return fmt.Errorf("make home %s 0700: %w", home, err)
	}
	return nil
}

// removeOwned removes every entry below dir owned by uid (all of them when all is set), keeping
// dir itself. A missing dir, or one that is a link, has nothing to remove.
//
// It never deletes by a path a job can change: each directory is opened relative to its parent's
// descriptor without following links, its owner is read from the open descriptor, and every
// unlink is relative to the descriptor that was checked. A slot that swaps a directory for a link
// mid-walk (TestRemoveOwnedIsNotRedirected) makes the walk skip it, never follow it.
func removeOwned(dir string, uid uint32, all bool) error {
	fd, st, err := openDir(unix.AT_FDCWD, dir, dir)
	if fd < 0 || err != nil {
		return err
	}
	defer unix.Close(fd)
	w := walker{uid: uid, dev: uint64(st.Dev)}
	return w.clear(fd, dir, all)
}

// openDir opens the directory name below the directory open at parent, without following a
// link, and stats what it opened. It returns fd -1 and no error when there is no directory by
// that name (missing, or replaced by a link or a file): nothing to follow. path is for messages.
func openDir(parent int, name, path string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Openat(parent, name, dirFlags, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return -1, st, nil
	}
	if err != nil {
		return -1, st, fmt.Errorf("open %s: %w", path, err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, fmt.Errorf("stat %s: %w", path, err)
	}
	return fd, st, nil
}

// walker removes one uid's entries below a directory on one filesystem.
type walker struct {
	uid uint32
	dev uint64
}

// clear removes the entries of the directory open at fd that uid owns, or all of them when all
// is set, descending into every directory to find uid's entries deeper. path names fd in
// messages only; it is never opened.
func (w walker) clear(fd int, path string, all bool) error {
	names, err := readNames(fd)
	if errors.Is(err, unix.ENOENT) {
		return nil // removed since it was opened (its owner cleaned up meanwhile): nothing left in it
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", path, err)
	}
	var errs []error
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("stat %s: %w", filepath.Join(path, name), err))
			}
			continue
		}
		if uint64(st.Dev) != w.dev {
			continue // a mount point: another filesystem is not a job's leftover
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			errs = append(errs, w.dir(fd, name, filepath.Join(path, name), st, all))
			continue
		}
		if !all && st.Uid != w.uid {
			continue
		}
		if err := unix.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("remove %s: %w", filepath.Join(path, name), err))
		}
	}
	return errors.Join(errs...)
}

// dir empties the directory name below parent (seen as st) of uid's entries and removes it when
// uid owns it (or all is set). What is opened must be the directory that was seen: a link or
// another directory swapped in meanwhile is left alone.
func (w walker) dir(parent int, name, path string, seen unix.Stat_t, all bool) error {
	fd, st, err := openDir(parent, name, path)
	if fd < 0 || err != nil {
		return err // fd -1: replaced since it was seen, nothing that was checked to follow
	}
	defer unix.Close(fd)
	if st.Dev != seen.Dev || st.Ino != seen.Ino {
		return nil
	}
	owned := all || st.Uid == w.uid
	if err := w.clear(fd, path, owned); err != nil {
		return err
	}
	if !owned {
		return nil
	}
	// Only an empty directory goes: if a job swapped another in by now, it is one that job could
	// remove itself, or the removal fails.
	if err := unix.Unlinkat(parent, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}
