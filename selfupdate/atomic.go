package selfupdate

import (
	"io/fs"
	"os"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
)

// WriteFileAtomic writes data to path so a reader (or a crash) sees the old content or the new,
// never a torn file: temp file in the same directory, fsync, chmod perm, rename, fsync the directory.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	return atomicfile.Write(path, data, perm)
}

// createSynced creates a temp file in dir (pattern as os.CreateTemp), fills it, fsyncs it and sets
// perm; it returns the file's path, or removes it and returns the error.
func createSynced(dir, pattern string, perm fs.FileMode, fill func(*os.File) error) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
