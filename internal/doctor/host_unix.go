//go:build unix

package doctor

import (
	"os"

	"golang.org/x/sys/unix"
)

// StatfsFree is the space left to unprivileged users on path's filesystem (Bavail, as df shows).
func StatfsFree(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
