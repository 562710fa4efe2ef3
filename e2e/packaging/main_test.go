//go:build e2e

// Package packaging is the end-to-end test of the .deb, .rpm and .apk `make package` builds (issue
// 32 item 1): the .deb installed into a clean Debian root made by mmdebstrap (never the build host's
// own system), its service started as the unit's ExecStart says against the simulator, a job run,
// and a purge that leaves the root as it was; the .rpm and .apk read for their files and scripts,
// since only Debian's packages install on the CI hosts; lintian on the .deb.
//
// It needs root (chroot, mount), mmdebstrap, dpkg-deb, lintian and rpm: `make tools` installs
// them and makes the Debian root once (bin/debroot-bookworm.tar); a missing one fails the test
// saying so, never skips it.
package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/daemonproc"
)

func TestMain(m *testing.M) { harness.Main(m, func() { _ = os.RemoveAll(dist.dir) }) }

// version is the version `make package` is run with: a plain release (selfupdate reads `--version`
// as runner-manager X.Y.Z[-suffix]; a Debian "~" is not one).
const version = "0.1.0"

// dist holds the packages of this test process: `make package` runs once, for linux/amd64.
var dist struct {
	once sync.Once
	dir  string
	out  string
	err  error
}

// packages runs `make package` for amd64 into a directory of its own and returns it; later calls
// return the same directory.
func packages(t *testing.T) string {
	t.Helper()
	need(t, "dpkg-deb", "rpm", "lintian", "mmdebstrap")
	dist.once.Do(func() {
		root, err := repoRoot()
		if err != nil {
			dist.err = err
			return
		}
		if dist.dir, dist.err = os.MkdirTemp("", "runner-manager-dist-"); dist.err != nil {
			return
		}
		cmd := exec.Command("make", "-C", root, "package", "DIST="+dist.dir, "PLATFORMS=linux/amd64",
			"PKG_ARCHS=amd64", "VERSION="+version)
		out, err := cmd.CombinedOutput()
		dist.out, dist.err = string(out), err
	})
	if dist.err != nil {
		t.Fatalf("make package: %v\n%s", dist.err, dist.out)
	}
	return dist.dir
}

// artifact is the one file in dir matching pattern.
func artifact(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("want one %s in %s, found %v (%v)", pattern, dir, m, err)
	}
	return m[0]
}

// need fails the test, naming what to install, when the test is not root or a tool is missing.
func need(t *testing.T, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the packaging tests need root (chroot, mount, dpkg in a Debian root); run the e2e suite as root, as CI does")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the packaging tests need %s: run make tools (it installs mmdebstrap, lintian and rpm)", tool)
		}
	}
}

func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return daemonproc.ModuleRoot(wd)
}

// run runs name with args and returns its combined output, failing the test on an error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
