//go:build e2e

package dockertest

import (
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/dockerd"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// RunnerDir is where RunnerRoot puts the fake runner package (run.sh, bin/Runner.Listener) in the
// image, for `runner_in_image = true`.
const RunnerDir = "/actions-runner"

// BusyboxRoot makes a minimal root filesystem in dir (dockerd.BusyboxRoot: Debian's static
// busybox with its applet links, /etc/passwd, /tmp); it fails the test when busybox-static is not
// installed.
func BusyboxRoot(t testing.TB, dir string) {
	t.Helper()
	if err := dockerd.BusyboxRoot(dir); err != nil {
		t.Fatalf("dockertest: %v", err)
	}
}

// RunnerRoot is BusyboxRoot plus ghsim's fake runner package (built static, CGO_ENABLED=0) under
// RunnerDir, owned by root and world-readable.
func RunnerRoot(t testing.TB, dir string) {
	t.Helper()
	BusyboxRoot(t, dir)
	pkgDir := t.TempDir()
	pkg, err := ghsim.BuildFakeRunnerPackage(context.Background(), pkgDir)
	if err != nil {
		t.Fatalf("dockertest: build the fake runner package: %v", err)
	}
	dst := filepath.Join(dir, strings.TrimPrefix(RunnerDir, "/"))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatalf("dockertest: %v", err)
	}
	if out, err := exec.Command("tar", "-xzf", pkg.Path, "-C", dst, "--no-same-owner").CombinedOutput(); err != nil {
		t.Fatalf("dockertest: unpack the fake runner package: %v: %s", err, out)
	}
}

// Import tars the root filesystem at root and `docker import`s it as name, with changes as
// `docker import --change` lines ("CMD [...]", "ENV K=V", "USER 1000").
func (d *Daemon) Import(t testing.TB, root, name string, changes ...string) Image {
	t.Helper()
	img, err := d.ImportRoot(root, name, changes...)
	if err != nil {
		t.Fatalf("dockertest: %v", err)
	}
	return img
}

// WriteTar writes the tree at root as an uncompressed tar stream owned by 0:0 (dockerd.WriteTar).
func WriteTar(w io.Writer, root string) error { return dockerd.WriteTar(w, root) }

// RunnerImage builds RunnerRoot and imports it as name (a busybox shell as CMD).
func (d *Daemon) RunnerImage(t testing.TB, name string) Image {
	t.Helper()
	return d.build(t, name, RunnerRoot, `CMD ["/bin/sh"]`)
}

// build makes a root filesystem with root in a temporary directory and imports it as name, with
// a PATH covering every place the builders put binaries.
func (d *Daemon) build(t testing.TB, name string, root func(testing.TB, string), cmd string) Image {
	t.Helper()
	dir := t.TempDir()
	root(t, dir)
	return d.Import(t, dir, name, cmd, "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin")
}

// dindBinaries are what a Docker-in-Docker sidecar runs, from this host's docker.io: the daemon,
// its containerd, shim and runc, and the CLI (jobs that share the sidecar's image use it).
var dindBinaries = []string{"dockerd", "containerd", "containerd-shim-runc-v2", "runc", "docker"}

// libPath matches the resolved libraries in `ldd` output ("libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6
// (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)").
var libPath = regexp.MustCompile(`(/\S+\.so[^\s]*)`)

// DindRoot makes in dir the root filesystem of a Docker-in-Docker image from this host's docker.io
// binaries and the shared libraries ldd names for them, on top of BusyboxRoot (sh and mount run the
// sidecar's start script). The Debian docker.io CLI goes to /usr/bin/docker; a statically built
// docker CLI elsewhere on PATH is not what the image needs.
func DindRoot(t testing.TB, dir string) {
	t.Helper()
	BusyboxRoot(t, dir)
	var paths []string
	for _, b := range dindBinaries {
		p := hostBinary(t, b)
		copyFile(t, p, filepath.Join(dir, "usr", "bin", b), 0o755)
		paths = append(paths, p)
	}
	out, err := exec.Command("ldd", paths...).CombinedOutput()
	if err != nil && len(out) == 0 {
		t.Fatalf("dockertest: ldd %v: %v", paths, err)
	}
	for _, m := range libPath.FindAllStringSubmatch(string(out), -1) {
		lib := m[1]
		copyFile(t, lib, filepath.Join(dir, lib), 0o755) // ReadFile follows the soname link
	}
	for _, sub := range []string{"var/lib/docker", "run", "etc/docker"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatalf("dockertest: %v", err)
		}
	}
}

// DindImage builds DindRoot and imports it as name.
func (d *Daemon) DindImage(t testing.TB, name string) Image {
	t.Helper()
	return d.build(t, name, DindRoot, `CMD ["dockerd"]`)
}

// hostBinary finds a docker.io binary in the Debian package's directories first (a static docker
// CLI in /usr/local/bin would shadow the package's on PATH).
func hostBinary(t testing.TB, name string) string {
	t.Helper()
	for _, d := range []string{"/usr/bin", "/usr/sbin"} {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("dockertest: %s not found: install Debian's docker.io (`make e2e-tools` does)", name)
	}
	return p
}

func copyFile(t testing.TB, src, dst string, mode fs.FileMode) {
	t.Helper()
	if err := dockerd.CopyFile(src, dst, mode); err != nil {
		t.Fatalf("dockertest: %v", err)
	}
}
