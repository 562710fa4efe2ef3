//go:build !unix

package doctor

import (
	"errors"
	"os"
)

// StatfsFree has no statfs to ask off Unix; doctor reports the free-space check as not measured.
func StatfsFree(path string) (uint64, error) {
	return 0, &os.PathError{Op: "statfs", Path: path, Err: errors.ErrUnsupported}
}
