package runner

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type zipEntryT struct {
	name, body string
	mode       fs.FileMode // 0: a regular 0644 file
}

func buildZip(t *testing.T, entries []zipEntryT) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// winRunnerPackage looks like a (tiny) actions/runner win-x64 .zip: no modes, run.cmd at the root.
var winRunnerPackage = []zipEntryT{
	{name: "bin/", mode: fs.ModeDir | 0o755},
	{name: "run.cmd", body: "@echo off\r\nexit /b 0\r\n"},
	{name: "config.cmd", body: "@echo off\r\n"},
	{name: "bin/Runner.Listener.exe", body: strings.Repeat("MZ", 4096)},
	{name: "externals/node20/bin/node.exe", body: "MZ"},
}

func winPackage(url string, body []byte) Package {
	return Package{Version: "2.321.0", OS: "win", Arch: "x64", URL: url + "/actions-runner-win-x64-2.321.0.zip", SHA256: sha(body)}
}

// The Windows package is a .zip: the cache unpacks it (by the package's OS, layoutOfPackage)
// with its files read-only like a tarball's, ready for run.cmd.
func TestEnsureExtractsAWindowsZip(t *testing.T) {
	t.Parallel()
	body := buildZip(t, winRunnerPackage)
	srv := servePackage(t, serveBytes(body))
	c := newTestCache(t, CacheOptions{})
	dir, err := c.Ensure(context.Background(), winPackage(srv.URL, body))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range winRunnerPackage {
		info, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e.name)))
		if err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		if e.mode.IsDir() != info.IsDir() || !info.IsDir() && info.Mode().Perm()&0o222 != 0 {
			t.Errorf("%s: mode %v", e.name, info.Mode())
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, layoutFor("windows").runScript)); string(got) != winRunnerPackage[1].body {
		t.Errorf("run.cmd holds %q", got)
	}
	if _, err := c.Ensure(context.Background(), winPackage(srv.URL, body)); err != nil || srv.hits.Load() != 1 {
		t.Fatalf("second Ensure: %v after %d downloads, want the cached package (its record verifies)", err, srv.hits.Load())
	}
}

// Every hostile zip is refused whole, by the same rules as a tarball, plus names the zip format
// forbids and Windows would read as separators, drives or streams.
func TestEnsureRefusesHostileZips(t *testing.T) {
	t.Parallel()
	refusesEach(t, append([]hostileArchive{
		{"backslash dot-dot", []tarEntry{{name: `..\evil`, body: "x"}}, "backslash or a colon"},
		{"drive letter", []tarEntry{{name: "C:evil", body: "x"}}, "backslash or a colon"},
		{"stream", []tarEntry{{name: "run.cmd:hidden", body: "x"}}, "backslash or a colon"},
		{"named pipe", []tarEntry{{name: "fifo", typ: tar.TypeFifo}}, "unsupported entry type"},
	}, hostileInEveryFormat...), buildZipOfTar, winPackage)
}

// buildZipOfTar writes entries, described as for buildTarGz, as a zip: the same package in the
// other format. A zip has no hardlinks nor devices; asking for one fails the test.
func buildZipOfTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	z := make([]zipEntryT, len(entries))
	for i, e := range entries {
		z[i] = zipEntryT{name: e.name, body: e.body}
		switch e.typ {
		case 0, tar.TypeReg:
		case tar.TypeSymlink: // a zip symlink's body is its target
			z[i].body, z[i].mode = e.link, fs.ModeSymlink|0o777
		case tar.TypeFifo:
			z[i].mode = fs.ModeNamedPipe | 0o644
		default:
			t.Fatalf("entry %s: a zip cannot hold a tar entry of type %q", e.name, e.typ)
		}
	}
	return buildZip(t, z)
}

// A Windows package that is not a zip (a tarball where GitHub lists a .zip) is refused.
func TestEnsureRefusesNonZipForWindows(t *testing.T) {
	t.Parallel()
	ensureRefused(t, buildTarGz(t, runnerPackage), winPackage, "not a zip")
}

// FuzzExtractZip: whatever the archive, extraction never writes outside its destination.
func FuzzExtractZip(f *testing.F) {
	f.Add(buildZip(&testing.T{}, winRunnerPackage))
	f.Add(buildZip(&testing.T{}, []zipEntryT{{name: "a/b", body: "..", mode: fs.ModeSymlink | 0o777}, {name: "a/b/c", body: "x"}}))
	f.Add(buildZip(&testing.T{}, []zipEntryT{{name: "../x", body: "x"}}))
	f.Fuzz(func(t *testing.T, data []byte) { extractsInside(t, data, extractZip) })
}
