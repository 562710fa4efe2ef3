package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// OpenAncestors makes dir and its ancestors below the temporary directory (t.TempDir's are 0700)
// traversable by others, as a runner user must pass through them to its runtime directory (the
// daemon checks it before running runners as slot users).
func OpenAncestors(t testing.TB, dir string) {
	t.Helper()
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(d, os.TempDir()+string(filepath.Separator)) && info.Mode().Perm()&0o011 != 0o011 {
			if err := os.Chmod(d, info.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
}
