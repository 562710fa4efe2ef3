package runner

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// removeBelow removes rel below root and everything under it (RemoveRuntimeDir, RemoveWorkDir).
// Where the file system refuses the POSIX-semantics delete os.Root.RemoveAll asks Windows for,
// with an error Go does not fall back from (deleteUnsupported: ERROR_INVALID_FUNCTION, which wine
// 8.0 answers and some third-party Windows file system drivers do too), the tree is removed entry
// by entry instead (removeTree). TestRemoveTree pins the fallback on Linux.
func removeBelow(root *os.Root, rel string) error {
	err := root.RemoveAll(rel)
	if err != nil && deleteUnsupported(err) {
		return removeTree(filepath.Join(root.Name(), rel))
	}
	return err
}

// removeTree removes dir and everything under it deepest first, each entry by its path with
// os.Remove (DeleteFileW or RemoveDirectoryW on Windows), never following a link: a symbolic link
// or junction is removed as itself. It is for Windows, where runners run as the daemon's own
// account, so no runner can gain by swapping a path under the daemon (docs/security.md).
func removeTree(dir string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for i := len(paths) - 1; i >= 0; i-- {
		if err := os.Remove(paths[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
