package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckTraversable(t *testing.T) {
	base := t.TempDir()
	closed := filepath.Join(base, "closed")
	root := filepath.Join(closed, "state-runners")
	if err := os.MkdirAll(root, 0o711); err != nil {
		t.Fatal(err)
	}
	// t.TempDir's own directories may be 0700: open them, then close one on purpose.
	for d := closed; d != filepath.Dir(d); d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := checkTraversable(root); err != nil {
		t.Fatalf("open ancestors refused: %v", err)
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	err := checkTraversable(root)
	if err == nil || !strings.Contains(err.Error(), "chmod o+x "+closed) {
		t.Fatalf("a 0700 ancestor: got %v, want an error naming chmod o+x %s", err, closed)
	}
}
