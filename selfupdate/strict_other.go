//go:build !unix && !windows

package selfupdate

import (
	"errors"
	"io/fs"
)

func sourceFix(string) string { return "self-update runs on unix and Windows" }

// checkEntry cannot read owners here, so it refuses every source.
func checkEntry(p string, _ fs.FileInfo, _ int) error {
	return errors.New(p + ": ownership checks need a unix or Windows system")
}
