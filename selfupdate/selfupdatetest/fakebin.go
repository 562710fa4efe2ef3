// Package selfupdatetest builds stand-in runner-manager binaries for tests that must execute a
// candidate: real executables that answer --version as the real binary does (same internal/version
// variable, same -ldflags), or misbehave the ways a broken candidate can. Only tests import it.
package selfupdatetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Build compiles selfupdate/testdata/fakebin into dir/name for each name: "vX.Y.Z" reports version
// X.Y.Z; "fail" exits 1, "hang" never answers, "garbage" prints nonsense. Call it once per test
// package (TestMain): each build links a binary.
func Build(dir string, names ...string) error {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return fmt.Errorf("selfupdatetest: cannot locate its own source")
	}
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "fakebin")
	for _, name := range names {
		flags := "-X main.Mode=" + name
		if v, ok := strings.CutPrefix(name, "v"); ok {
			flags = "-X github.com/runner-manager/runner-manager/internal/version.Version=" + v
		}
		cmd := exec.Command("go", "build", "-ldflags", flags, "-o", filepath.Join(dir, name), ".")
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building fake binary %s: %w\n%s", name, err, out)
		}
	}
	return nil
}

// Main is a TestMain body: it builds names into a temp dir, stores its path in *dir, runs the
// tests and removes the binaries. Use: func TestMain(m *testing.M) { os.Exit(Main(m, &bins, "v1.2.3")) }
func Main(m *testing.M, dir *string, names ...string) int {
	tmp, err := os.MkdirTemp("", "fakebin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := Build(tmp, names...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*dir = tmp
	return m.Run()
}
