//go:build !unix

package runner

import "errors"

// FreeSpace is not measured off unix: min_free_disk cannot be checked there.
func FreeSpace(string) (int64, error) {
	return 0, errors.New("free disk space cannot be read on this OS: set min_free_disk = 0")
}
