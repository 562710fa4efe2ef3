//go:build unix

package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// FreeSpace is the free space, in bytes, of the filesystem holding path as an unprivileged user
// may use it (statfs f_bavail x f_bsize, what df shows as available): root's reserved blocks do
// not count, runners run as unprivileged users. A path not made yet (a work_dir before its first
// runner) is measured at its nearest existing parent, the filesystem it will be made on.
func FreeSpace(path string) (int64, error) {
	p := filepath.Clean(path)
	for {
		var st unix.Statfs_t
		err := unix.Statfs(p, &st)
		if err == nil {
			return int64(st.Bavail) * int64(st.Bsize), nil //nolint:unconvert // field types differ by OS
		}
		parent := filepath.Dir(p)
		if !errors.Is(err, fs.ErrNotExist) || parent == p {
			return 0, fmt.Errorf("free space of %s: %w", p, err)
		}
		p = parent
	}
}
