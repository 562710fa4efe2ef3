// Package golden owns the comparison of a test's output with its golden file: the file under
// testdata/ (or a generated doc) that holds the expected bytes, rewritten by the test's -update
// flag. Each test package keeps its own -update flag and passes its value in.
package golden

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Check fails t unless got equals the file at path. With update it first rewrites the file
// (creating its directory), so a deliberate change is made with -update and reviewed in git.
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if d := diff(got, want); d != "" {
		t.Errorf("%s is stale: %s (if the change is intended, run the test with -update to rewrite it)", path, d)
	}
}

// showWhole is the size up to which a mismatch shows both texts in full, not only the first
// line that differs.
const showWhole = 4 << 10

// diff says where got and want first differ, or returns "" when they are equal.
func diff(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	line := 0
	for line < len(g) && line < len(w) && bytes.Equal(g[line], w[line]) {
		line++
	}
	s := fmt.Sprintf("line %d is\n\t%q\nwant\n\t%q", line+1, at(g, line), at(w, line))
	if len(got) <= showWhole && len(want) <= showWhole {
		s += fmt.Sprintf("\n--- got\n%s\n--- want\n%s", got, want)
	}
	return s
}

// at is lines[i], or "(end of file)" past the end.
func at(lines [][]byte, i int) string {
	if i >= len(lines) {
		return "(end of file)"
	}
	return string(lines[i])
}
