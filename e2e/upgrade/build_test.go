//go:build e2e

package upgrade

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// The two versions of the test. Only the -X version differs between the builds, exactly as between
// two releases that a package manager installs over each other.
const (
	oldVersion = "1.0.0"
	newVersion = "1.1.0"
)

// builds holds this test process's two binaries, built once for all tests.
var builds struct {
	once sync.Once
	dir  string
	err  error
}

// binaries returns the paths of the 1.0.0 and 1.1.0 builds of cmd/runner-manager. The files are
// shared by every test: copy them, never run the upgrade on them in place.
func binaries(t testing.TB) (oldBin, newBin string) {
	t.Helper()
	start := time.Now()
	builds.once.Do(func() { builds.dir, builds.err = buildVersions(oldVersion, newVersion) })
	t.Logf("builds of %s and %s ready after %s", oldVersion, newVersion, time.Since(start).Round(time.Millisecond))
	if builds.err != nil {
		t.Fatalf("build the two versions: %v", builds.err)
	}
	return binaryPath(builds.dir, oldVersion), binaryPath(builds.dir, newVersion)
}

func removeBuilds() {
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
	}
}

func binaryPath(dir, version string) string { return filepath.Join(dir, "runner-manager-"+version) }

// buildVersions links cmd/runner-manager once per version. The second build reuses the compile
// cache: only the link step runs again.
func buildVersions(versions ...string) (string, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("no go.mod two levels above the test directory (%s): run the test from the repository", root)
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	dir, err := os.MkdirTemp("", "runner-manager-e2e-upgrade-")
	if err != nil {
		return "", fmt.Errorf("create the build directory: %w", err)
	}
	for _, v := range versions {
		ldflags := "-X github.com/runner-manager/runner-manager/internal/version.Version=" + v
		cmd := exec.Command(goBin, "build", "-ldflags", ldflags, "-o", binaryPath(dir, v), "./cmd/runner-manager")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("go build version %s: %w\n%s", v, err, out)
		}
	}
	return dir, nil
}
