package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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

// builds holds this test process's builds of cmd/runner-manager, one per platform ("" for the
// host's). Each directory is per process (os.MkdirTemp), so test binaries of several packages
// building at once never share or race on an output file.
var builds = struct {
	mu  sync.Mutex
	all map[string]*onceBuild
}{all: map[string]*onceBuild{}}

type onceBuild struct {
	once sync.Once
	dir  string
	err  error
}

// buildOnce runs compile (into a fresh directory) the first time key is asked for, and returns that
// directory to every later call.
func buildOnce(key string, compile func(dir string) error) (string, error) {
	builds.mu.Lock()
	b, ok := builds.all[key]
	if !ok {
		b = &onceBuild{}
		builds.all[key] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "runner-manager-e2e-bin-")
		if b.err == nil {
			b.err = compile(b.dir)
		}
	})
	return b.dir, b.err
}

// Build compiles cmd/runner-manager once per test process, with -ldflags setting the version, and
// returns the binary's path. Later calls (from any test) return the same binary.
func Build(t testing.TB) string {
	t.Helper()
	dir, err := buildOnce("", func(dir string) error { return BuildVersion(Version, filepath.Join(dir, "runner-manager")) })
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	return filepath.Join(dir, "runner-manager")
}

// BuildFor cross-compiles cmd/runner-manager for goos/goarch once per test process, as Build does
// (static, Version linked in), and returns its path: runner-manager.exe for Windows, which
// e2e/windows runs under wine.
func BuildFor(t testing.TB, goos, goarch string) string {
	t.Helper()
	name := "runner-manager"
	if goos == "windows" {
		name += ".exe"
	}
	dir, err := buildOnce(goos+"/"+goarch, func(dir string) error {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		out := filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, filepath.Join(runtime.GOROOT(), "bin", "go"), "build",
			"-ldflags", "-X "+daemonproc.VersionVar+"="+Version, "-o", out, "./cmd/runner-manager")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("GOOS=%s GOARCH=%s go build ./cmd/runner-manager: %w\n%s", goos, goarch, err, msg)
		}
		return daemonproc.CheckStatic(out)
	})
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	return filepath.Join(dir, name)
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
	dirs := []string{packages.dir}
	builds.mu.Lock()
	for _, b := range builds.all {
		dirs = append(dirs, b.dir)
	}
	builds.mu.Unlock()
	for _, dir := range dirs {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
	os.Exit(code)
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
