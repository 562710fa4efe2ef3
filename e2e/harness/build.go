package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/daemonproc"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// Version is the version the harness links into the binary it builds.
const Version = "0.1.0-e2e"

// builds holds the one build of this test process. The directory is per process (os.MkdirTemp), so
// test binaries of several packages building at once never share or race on an output file.
var builds struct {
	once sync.Once
	dir  string
	err  error
}

// Build compiles cmd/runner-manager once per test process, with -ldflags setting the version, and
// returns the binary's path. Later calls (from any test) return the same binary.
func Build(t testing.TB) string {
	t.Helper()
	builds.once.Do(func() { builds.dir, builds.err = build() })
	if builds.err != nil {
		t.Fatalf("harness: %v", builds.err)
	}
	return filepath.Join(builds.dir, "runner-manager")
}

// packages holds the fake runner package of this test process: built and tarred once, served by
// every simulator the process starts (each StartSim used to tar it again, tens of seconds under load).
var packages struct {
	once sync.Once
	dir  string
	pkg  ghsim.Package
	err  error
}

func fakeRunnerPackage(t testing.TB) ghsim.Package {
	t.Helper()
	packages.once.Do(func() {
		packages.dir, packages.err = os.MkdirTemp("", "runner-manager-e2e-pkg-")
		if packages.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		packages.pkg, packages.err = ghsim.BuildFakeRunnerPackage(ctx, packages.dir)
	})
	if packages.err != nil {
		t.Fatalf("harness: %v", packages.err)
	}
	return packages.pkg
}

// Main is for a suite's TestMain: it runs the tests, then the suite's own cleanups (after), then
// removes the build directories.
//
//	func TestMain(m *testing.M) { harness.Main(m) }
func Main(m *testing.M, after ...func()) {
	code := m.Run()
	for _, f := range after {
		f()
	}
	for _, dir := range []string{builds.dir, packages.dir} {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// build makes the harness's binary the way `make build` does (daemonproc.Build: static, version
// linked in).
func build() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "runner-manager-e2e-bin-")
	if err != nil {
		return "", fmt.Errorf("create the build directory: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := daemonproc.Build(ctx, root, filepath.Join(dir, "runner-manager"), Version); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// BuildVersion links cmd/runner-manager again with another version, at out (the compile cache is
// warm from Build, so only the link step runs). The upgrade tests install it over the harness's build.
func BuildVersion(version, out string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return daemonproc.Build(ctx, root, out, version)
}

// moduleRoot is the repository checkout this package was compiled from.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate the harness source to find the module root")
	}
	return daemonproc.ModuleRoot(filepath.Dir(file))
}
