//go:build unix

package runner

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFreeSpace(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	got, err := FreeSpace(dir)
	if err != nil || got <= 0 {
		t.Fatalf("FreeSpace(%s) = %d, %v", dir, got, err)
	}
	// A path not made yet is measured on the filesystem it would be made on.
	later, err := FreeSpace(filepath.Join(dir, "not", "yet"))
	if err != nil || later <= 0 || later > got*2 {
		t.Fatalf("FreeSpace of a path not made yet = %d, %v; its parent has %d", later, err, got)
	}
}
