//go:build !unix && !windows

package runner

import "errors"

// availableBytes is not measured on this OS: min_free_disk cannot be checked there.
func availableBytes(string) (int64, error) {
	return 0, errors.New("free disk space cannot be read on this OS: set min_free_disk = 0")
}
