//go:build unix

package runner

import "golang.org/x/sys/unix"

// availableBytes is statfs f_bavail x f_bsize.
func availableBytes(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil //nolint:unconvert // field types differ by OS
}
