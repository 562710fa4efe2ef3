//go:build !windows

package diag

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/runner-manager/runner-manager/internal/redact"
)

// collect walks the sources below runtimeDir by descriptors opened without following links, and
// keeps only regular files with one link, owned by their directory's owner (Keep's rule).
func collect(runtimeDir, tmp string, r *redact.Redactor, a *Attempt, budget *int64) error {
	top, err := unix.Open(runtimeDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open runtime directory %s to keep its diagnostics: %w", runtimeDir, err)
	}
	defer unix.Close(top)
	for _, src := range sources {
		dir, err := openPath(top, src.path)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				a.Skipped = append(a.Skipped, fmt.Sprintf("%s: %v", filepath.Join(src.path...), err))
			}
			continue
		}
		keepDir(dir, src.prefix, tmp, r, a, budget)
		unix.Close(dir)
	}
	return nil
}

// openPath opens the directories of path one by one below dir, never following a link.
func openPath(dir int, path []string) (int, error) {
	fd := dir
	for i, name := range path {
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if i > 0 {
			unix.Close(fd)
		}
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return -1, fmt.Errorf("not a directory (a link?): not read")
			}
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// keepDir copies the regular files of the directory open at dir into tmp, within budget.
func keepDir(dir int, prefix, tmp string, r *redact.Redactor, a *Attempt, budget *int64) {
	var dst unix.Stat_t
	if err := unix.Fstat(dir, &dst); err != nil {
		return
	}
	// Read the names through a duplicate: os.File closes what it wraps.
	dup, err := unix.Dup(dir)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(dup), prefix)
	names, _ := f.Readdirnames(maxEntries)
	f.Close()
	keepFiles(names, prefix, tmp, r, a, budget, func(name string, limit int64) ([]byte, int64, string) {
		return readRegular(dir, name, dst.Uid, limit)
	})
}

// readRegular reads at most limit bytes from the end of name in dir: opened without following a
// link and without blocking on a FIFO, kept only if it is a regular file with one link owned by
// owner. why says why it was not kept.
func readRegular(dir int, name string, owner uint32, limit int64) (data []byte, dropped int64, why string) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, 0, "a symbolic link: not followed"
		}
		return nil, 0, "cannot be opened: " + err.Error()
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, 0, err.Error()
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, 0, "not a regular file"
	case st.Nlink != 1:
		return nil, 0, "a hard link: not read"
	case st.Uid != owner:
		return nil, 0, "not owned by its directory's owner: not read"
	}
	if st.Size > limit {
		dropped = st.Size - limit
	}
	data, err = io.ReadAll(io.NewSectionReader(f, dropped, limit))
	if err != nil {
		return nil, 0, err.Error()
	}
	return data, dropped, ""
}
