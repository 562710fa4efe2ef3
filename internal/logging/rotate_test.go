package logging

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRotatingFileKeepsItsBound: a log written far past its bound ends as the current file and
// Keep older ones, none over the bound, the newest lines in the current file and none lost
// between the kept files.
func TestRotatingFileKeepsItsBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "runner-manager.log")
	r, err := OpenRotating(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 { // 40 lines of 10 bytes: 4 files' worth
		if _, err := fmt.Fprintf(r, "line %04d\n", i); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var all string
	for _, name := range []string{path + ".2", path + ".1", path} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 100 {
			t.Errorf("%s holds %d bytes, over the bound of 100", name, len(b))
		}
		all += string(b)
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Errorf("a third old file was kept: %v", err)
	}
	want := ""
	for i := 10; i < 40; i++ {
		want += fmt.Sprintf("line %04d\n", i)
	}
	if all != want {
		t.Errorf("kept lines:\n%s\nwant the last 30 in order", all)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("log file mode %v, want 0600", fi.Mode())
	}

	// Reopened, it appends to what is there and counts it toward the bound.
	r, err = OpenRotating(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fmt.Fprint(r, "after restart\n")
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "after restart") {
		t.Errorf("the full file was not rotated before the first line after a restart: %q", b)
	}
}
