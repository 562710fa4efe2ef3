// Package atomicfile writes small files so that a reader sees the old content, the new content,
// or no file, never a torn one, even across a crash or power loss: a temp file in the same
// directory, fsync, chmod, rename over the target, fsync of the directory. Every state file the
// daemon and the shim keep outside the journal (exit status, shim state, credentials, the
// self-update guard, service records) goes through it.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data, mode perm. A failure leaves path as it was and no temp file.
func Write(path string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := Temp(dir, "."+base+".tmp-*", perm, func(w io.Writer) error { _, err := w.Write(data); return err })
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(dir)
}

// Temp creates a file in dir (pattern as os.CreateTemp), fills it, fsyncs it and sets perm, and
// returns its path, for the caller to rename into place as Write does (selfupdate renames a
// binary it copied this way, keeping the old one aside). A failure leaves no file.
func Temp(dir, pattern string, perm fs.FileMode, fill func(io.Writer) error) (string, error) {
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

// SyncDir makes a rename or removal in dir durable. Filesystems that cannot sync a directory
// (fs.ErrInvalid) are accepted: there is nothing more to do on them, nor on Windows (dirSyncable).
func SyncDir(dir string) error {
	if !dirSyncable {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
