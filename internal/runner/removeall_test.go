package runner

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveTree: the entry-by-entry fallback of removeBelow removes a nested tree with a
// read-only directory, and removes a link to a directory outside as a link, leaving its target.
func TestRemoveTree(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	dir := filepath.Join(base, "runtime")
	for _, d := range []string{outside, filepath.Join(dir, "work", "deep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(outside, "keep"), filepath.Join(dir, "work", "deep", "f"), filepath.Join(dir, "run.cmd")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "work", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "work", "deep"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(dir, "work", "deep"), 0o755) })
	if os.Geteuid() != 0 {
		// Without root a read-only directory's entries cannot be unlinked; removeBelow's callers
		// run makeRemovable first. Root (CI) removes them regardless, as Windows' owner does.
		_ = os.Chmod(filepath.Join(dir, "work", "deep"), 0o755)
	}
	if err := removeTree(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still exists (%v)", dir, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Fatalf("the link's target lost its file: %v", err)
	}
	if err := removeTree(dir); err != nil {
		t.Fatalf("removing a tree that is gone: %v, want nil", err)
	}
}
