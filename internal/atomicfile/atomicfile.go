// Package atomicfile writes small files so that a reader sees the old content, the new content,
// or no file, never a torn one, even across a crash or power loss: a temp file in the same
// directory, fsync, chmod, rename over the target, fsync of the directory. Every state file the
// daemon and the shim keep outside the journal (exit status, shim state, credentials, the
// self-update guard, service records) goes through it.
package atomicfile

import (
	"errors"
	"fmt"
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
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(dir)
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
