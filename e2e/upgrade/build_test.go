//go:build e2e

package upgrade

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
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
		newBuild.err = build(newVersion, newBuild.path)
	})
	if newBuild.err != nil {
		t.Fatalf("build version %s: %v", newVersion, newBuild.err)
	}
	t.Logf("builds of %s and %s ready after %s", oldVersion, newVersion, time.Since(start).Round(time.Millisecond))
	return oldBin, newBuild.path
}

// build links cmd/runner-manager with version; the compile cache is warm from the harness's build,
// so only the link step runs again. The test runs in e2e/upgrade: the module root is two levels up.
func build(version, out string) error {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		goBin = "go"
	}
	ldflags := "-X github.com/runner-manager/runner-manager/internal/version.Version=" + version
	cmd := exec.Command(goBin, "build", "-ldflags", ldflags, "-o", out, "./cmd/runner-manager")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -ldflags %q ./cmd/runner-manager: %w\n%s", ldflags, err, out)
	}
	return nil
}
