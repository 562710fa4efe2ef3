//go:build windows

package doctor

import (
	"os"

	"github.com/runner-manager/runner-manager/internal/runner"
)

// StatfsFree is internal/runner's FreeSpace (GetDiskFreeSpaceEx's bytes available to the caller)
// of path, after the not-exist answer statfs gives on unix, which checkFreeDisk walks up on.
func StatfsFree(path string) (uint64, error) {
	if _, err := os.Stat(path); err != nil {
		return 0, err
	}
	n, err := runner.FreeSpace(path)
	return uint64(n), err
}
