package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// FreeSpace is the free space, in bytes, of the filesystem holding path as an unprivileged user
// may use it (availableBytes: what df shows as available, or Windows' bytes available to the
// caller): root's reserved blocks do not count, runners run as unprivileged users. A path not
// made yet (a work_dir before its first runner) is measured at its nearest existing parent, the
// filesystem it will be made on.
func FreeSpace(path string) (int64, error) {
	p := filepath.Clean(path)
	for {
		n, err := availableBytes(p)
		if err == nil {
			return n, nil
		}
		parent := filepath.Dir(p)
		if !errors.Is(err, fs.ErrNotExist) || parent == p {
			return 0, fmt.Errorf("free space of %s: %w", p, err)
		}
		p = parent
	}
}
