package selfupdate

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path so a reader (or a crash) sees the old content or the new,
// never a torn file: temp file in the same directory, fsync, chmod perm, rename, fsync the directory.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := createSynced(dir, "."+base+".tmp-*", perm, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
	if err == nil {
		if err = os.Rename(tmp, path); err != nil {
			_ = os.Remove(tmp)
		}
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
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

// syncDir makes a rename in dir durable: without it a power loss can undo the swap.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
