package selfupdate

import (
	"io/fs"
	"os"
)

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
