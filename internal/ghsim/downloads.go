package ghsim

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/google/go-github/v62/github"
)

// FakeRunnerVersion is the version the fake runner package claims, in actions/runner's numbering.
const FakeRunnerVersion = "2.317.0"

// Package is a runner package (a .tar.gz, or a .zip for Windows) on disk.
type Package struct {
	Path     string // the .tar.gz or .zip
	Filename string // actions-runner-<os>-<arch>-<version>.tar.gz, or .zip for win
	OS       string // GitHub's spelling: linux, osx, win
	Arch     string // x64, arm64, arm
	Version  string
	SHA256   string // hex
	// FileSHA256 is the hex sha256 of each file in the package, by its path there (run.sh,
	// bin/Runner.Listener; run.cmd, bin/Runner.Listener.exe): tests compare what a runner runs with what was served.
	FileSHA256 map[string]string
}

// runnerOS and runnerArch map Go's platform names to the ones the downloads endpoint uses.
func runnerOS(goos string) string {
	switch goos {
	case "darwin":
		return "osx"
	case "windows":
		return "win"
	}
	return goos
}

func runnerArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x64"
	case "386":
		return "x86"
	}
	return goarch
}

// fakeRunnerBuilds caches the fake runner binary per process and source hash: many tests in one
// package share one `go build`, and the rename into place keeps parallel packages safe.
var fakeRunnerBuilds sync.Map // source hash -> *fakeRunnerBuild

type fakeRunnerBuild struct {
	once sync.Once
	path string
	err  error
}

// runShScript execs the listener so signals reach it directly, like actions/runner's run.sh.
const runShScript = `#!/bin/sh
# ghsim fake actions/runner entry point: run.sh [--jitconfig X], or ACTIONS_RUNNER_INPUT_JITCONFIG.
dir=$(cd "$(dirname "$0")" && pwd)
exec "$dir/bin/Runner.Listener" run "$@"
`

// runCmdScript is run.sh's Windows twin, as actions/runner's win-x64 package ships run.cmd: it
// runs the listener beside it (%~dp0 is the script's own directory) and returns its exit code.
const runCmdScript = "@echo off\r\n" +
	"rem ghsim fake actions/runner entry point: run.cmd [--jitconfig X], or ACTIONS_RUNNER_INPUT_JITCONFIG.\r\n" +
	"\"%~dp0bin\\Runner.Listener.exe\" run %*\r\n" +
	"exit /b %ERRORLEVEL%\r\n"

// packageFile is one file of a runner package.
type packageFile struct {
	name string
	mode int64
	data []byte
}

// BuildFakeRunnerPackage builds the fake runner for this host (once per process) and writes its
// package into dir (see BuildFakeRunnerPackageFor).
func BuildFakeRunnerPackage(ctx context.Context, dir string) (Package, error) {
	return BuildFakeRunnerPackageFor(ctx, dir, runtime.GOOS, runtime.GOARCH)
}

// BuildFakeRunnerPackageFor builds the fake runner for goos/goarch (once per process) and writes
// its package into dir under the name actions/runner publishes it: for Windows
// actions-runner-win-<arch>-<version>.zip holding run.cmd and bin/Runner.Listener.exe, elsewhere
// actions-runner-<os>-<arch>-<version>.tar.gz holding run.sh and bin/Runner.Listener.
func BuildFakeRunnerPackageFor(ctx context.Context, dir, goos, goarch string) (Package, error) {
	bin, err := buildFakeRunner(ctx, goos, goarch)
	if err != nil {
		return Package{}, err
	}
	binData, err := os.ReadFile(bin)
	if err != nil {
		return Package{}, fmt.Errorf("ghsim: read fake runner binary: %w", err)
	}
	pkg := Package{OS: runnerOS(goos), Arch: runnerArch(goarch), Version: FakeRunnerVersion, FileSHA256: map[string]string{}}
	files := []packageFile{{"run.sh", 0o755, []byte(runShScript)}, {"bin/Runner.Listener", 0o755, binData}}
	write, ext := writeTarGz, "tar.gz"
	if goos == "windows" {
		files = []packageFile{{"run.cmd", 0o644, []byte(runCmdScript)}, {"bin/Runner.Listener.exe", 0o755, binData}}
		write, ext = writeZip, "zip"
	}
	pkg.Filename = fmt.Sprintf("actions-runner-%s-%s-%s.%s", pkg.OS, pkg.Arch, pkg.Version, ext)
	pkg.Path = filepath.Join(dir, pkg.Filename)
	var buf bytes.Buffer
	if err := write(&buf, files); err != nil {
		return Package{}, fmt.Errorf("ghsim: write runner package %s: %w", pkg.Filename, err)
	}
	for _, f := range files {
		fileSum := sha256.Sum256(f.data)
		pkg.FileSHA256[f.name] = hex.EncodeToString(fileSum[:])
	}
	sum := sha256.Sum256(buf.Bytes())
	pkg.SHA256 = hex.EncodeToString(sum[:])
	if err := os.WriteFile(pkg.Path, buf.Bytes(), 0o644); err != nil {
		return Package{}, fmt.Errorf("ghsim: write %s: %w", pkg.Path, err)
	}
	return pkg, nil
}

func writeTarGz(w io.Writer, files []packageFile) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// writeZip writes files deflated. Windows ignores the recorded modes; they let an extractor on
// Linux (ghsim's own tests) keep the listener executable.
func writeZip(w io.Writer, files []packageFile) error {
	zw := zip.NewWriter(w)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate}
		h.SetMode(os.FileMode(f.mode))
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := fw.Write(f.data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// ghsimSourceDir is this package's source directory; the fake runner is built from it.
func ghsimSourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

func buildFakeRunner(ctx context.Context, goos, goarch string) (string, error) {
	src := ghsimSourceDir()
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), goos, goarch)
	for _, sub := range []string{"fakerunner", "runnerproto"} {
		files, _ := filepath.Glob(filepath.Join(src, sub, "*.go"))
		if len(files) == 0 {
			return "", fmt.Errorf("ghsim: fake runner sources not found under %s; run from a checkout of the repository", src)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return "", fmt.Errorf("ghsim: read fake runner source: %w", err)
			}
			fmt.Fprintln(h, filepath.Base(f), len(data))
			h.Write(data)
		}
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]
	v, _ := fakeRunnerBuilds.LoadOrStore(key, &fakeRunnerBuild{})
	b := v.(*fakeRunnerBuild)
	b.once.Do(func() { b.path, b.err = goBuildFakeRunner(ctx, src, key, goos, goarch) })
	return b.path, b.err
}

func goBuildFakeRunner(ctx context.Context, src, key, goos, goarch string) (string, error) {
	dir := filepath.Join(os.TempDir(), "ghsim-fakerunner-"+key)
	out := filepath.Join(dir, "Runner.Listener")
	if goos == "windows" {
		out += ".exe"
	}
	if _, err := os.Stat(out); err == nil {
		return out, nil // built by an earlier process (or a parallel package)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("ghsim: create fake runner build dir: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "build-*")
	if err != nil {
		return "", fmt.Errorf("ghsim: create fake runner build file: %w", err)
	}
	tmp.Close()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", tmp.Name(), "./fakerunner")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("ghsim: go build of the fake runner for %s/%s failed: %w\n%s", goos, goarch, err, msg)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", fmt.Errorf("ghsim: install fake runner binary: %w", err)
	}
	return out, nil
}

// ServeRunnerPackage lists pkg on the runner downloads endpoints and serves its bytes.
func (s *Server) ServeRunnerPackage(pkg Package) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.packages = append(s.packages, pkg)
}

// handleDownloads serves GET {repo|org}/actions/runners/downloads.
func (s *Server) handleDownloads(w http.ResponseWriter, r *http.Request, _ scope, _ *account) {
	out := []*github.RunnerApplicationDownload{}
	for _, pkg := range s.packages {
		out = append(out, &github.RunnerApplicationDownload{OS: github.String(pkg.OS), Architecture: github.String(pkg.Arch),
			DownloadURL: github.String(s.URL() + "/_ghsim/downloads/" + pkg.Filename), Filename: github.String(pkg.Filename),
			SHA256Checksum: github.String(pkg.SHA256)})
	}
	writeJSON(w, http.StatusOK, out)
}

// handlePackageFile serves the tarball bytes (GitHub serves them from a CDN without auth).
func (s *Server) handlePackageFile(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	s.mu.Lock()
	var path string
	for _, pkg := range s.packages {
		if pkg.Filename == name {
			path = pkg.Path
		}
	}
	s.mu.Unlock()
	if path == "" {
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, "package file unavailable", http.StatusInternalServerError)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = io.Copy(w, f)
}
