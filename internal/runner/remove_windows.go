//go:build windows

package runner

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/windows"
)

// removeByPath removes the tree at path one entry at a time, deepest first, when os.Root's
// removal failed with "Invalid function": wine 8.0 has no POSIX-semantics delete, which Go's
// removal by handle asks for. Removing by path is no weaker here than by handle: runners run as
// the daemon's account and could remove all of it themselves. Links and junctions are removed as
// such, never entered (WalkDir does not follow them).
func removeByPath(path string, cause error) error {
	if !errors.Is(cause, windows.ERROR_INVALID_FUNCTION) {
		return cause
	}
	var entries []string
	err := filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		entries = append(entries, p)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, p := range slices.Backward(entries) {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
