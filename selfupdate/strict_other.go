//go:build !unix

package selfupdate

import "errors"

// CheckSource cannot read owners here, so it refuses every source (self-update is unix-only).
func CheckSource(path string, euid int) error {
	return errors.New("source binary " + path + " is refused: ownership checks need a unix system")
}
