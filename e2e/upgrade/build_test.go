//go:build e2e

package upgrade

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

// The two versions of the test: the harness's build is the running release, and a second link of
// the same sources with another -X version is the release a package manager installs over it.
const (
	oldVersion = harness.Version
	newVersion = "1.1.0"
)

// newBuild holds this test process's build of newVersion, made once for all tests.
var newBuild struct {
	once sync.Once
	path string
	err  error
}

// binaries returns the paths of the oldVersion and newVersion builds of cmd/runner-manager. The
// files are shared by every test: copy them, never run an upgrade on them in place.
func binaries(t testing.TB) (oldBin, newBin string) {
	t.Helper()
	start := time.Now()
	oldBin = harness.Build(t)
	// Beside the harness's binary, so harness.Main removes it with the harness's build directory.
	newBuild.once.Do(func() {
		newBuild.path = filepath.Join(filepath.Dir(oldBin), "runner-manager-"+newVersion)
		newBuild.err = harness.BuildVersion(newVersion, newBuild.path)
	})
	if newBuild.err != nil {
		t.Fatalf("build version %s: %v", newVersion, newBuild.err)
	}
	t.Logf("builds of %s and %s ready after %s", oldVersion, newVersion, time.Since(start).Round(time.Millisecond))
	return oldBin, newBuild.path
}
