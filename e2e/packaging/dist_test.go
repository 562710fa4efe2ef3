//go:build e2e

package packaging

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// distPlatforms are the six archives issue 33 item 5 asks of `make dist`.
var distPlatforms = []string{"darwin_amd64", "darwin_arm64", "linux_amd64", "linux_arm64", "windows_amd64", "windows_arm64"}

// TestDistArchives: `make dist` makes one archive per platform (tar.gz for linux and darwin, zip
// holding runner-manager.exe for Windows) and SHA256SUMS over exactly those six; a Windows archive
// built again is byte-identical (sorted entries, fixed mtimes, no owners or extra attributes).
func TestDistArchives(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run(t, "make", "-C", root, "dist", "DIST="+dir, "VERSION="+version)

	var want []string
	for _, p := range distPlatforms {
		ext := ".tar.gz"
		if strings.HasPrefix(p, "windows_") {
			ext = ".zip"
		}
		want = append(want, "runner-manager_"+version+"_"+p+ext)
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not \"<sha256>  <name>\"", line)
		}
		listed = append(listed, name)
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("SHA256SUMS lists %s: %v", name, err)
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: SHA256SUMS says %s, the file's sum is %x", name, sum, got)
		}
	}
	if !slices.Equal(listed, want) {
		t.Fatalf("SHA256SUMS lists %v, want the six archives %v", listed, want)
	}

	for _, name := range want {
		base := strings.TrimSuffix(strings.TrimSuffix(name, ".zip"), ".tar.gz")
		exe := "runner-manager"
		if strings.HasSuffix(name, ".zip") {
			exe += ".exe"
		}
		entries, magic := archiveEntries(t, filepath.Join(dir, name), base+"/"+exe)
		if wantEntries := []string{base + "/LICENSE", base + "/README.md", base + "/" + exe}; !slices.Equal(entries, wantEntries) {
			t.Errorf("%s holds %v, want %v in that order", name, entries, wantEntries)
		}
		if strings.HasSuffix(name, ".zip") && magic != "MZ" {
			t.Errorf("%s: %s starts with %q, not a Windows executable (MZ)", name, exe, magic)
		}
	}

	again := t.TempDir()
	run(t, "make", "-C", root, "dist", "DIST="+again, "VERSION="+version, "PLATFORMS=windows/amd64")
	name := "runner-manager_" + version + "_windows_amd64.zip"
	first, err1 := os.ReadFile(filepath.Join(dir, name))
	second, err2 := os.ReadFile(filepath.Join(again, name))
	if err1 != nil || err2 != nil || !bytes.Equal(first, second) {
		t.Fatalf("%s is not reproducible: two builds of the same commit differ (%v, %v)", name, err1, err2)
	}
}

// archiveEntries lists a .zip's or .tar.gz's entries in archive order and returns the first two
// bytes of the entry named exe. Every zip entry must carry the same modification time.
func archiveEntries(t *testing.T, path, exe string) (names []string, magic string) {
	t.Helper()
	head := func(r io.Reader) string {
		b := make([]byte, 2)
		n, _ := io.ReadFull(r, b)
		return string(b[:n])
	}
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			names = append(names, f.Name)
			if !f.Modified.Equal(zr.File[0].Modified) {
				t.Errorf("%s: %s has mtime %s, %s has %s: mtimes must be fixed", path, f.Name, f.Modified, zr.File[0].Name, zr.File[0].Modified)
			}
			if f.Name == exe {
				rc, err := f.Open()
				if err != nil {
					t.Fatal(err)
				}
				magic = head(rc)
				rc.Close()
			}
		}
		return names, magic
	}
	data, err := os.ReadFile(path) // an archive of one binary: small enough to read whole
	var gz *gzip.Reader
	if err == nil {
		gz, err = gzip.NewReader(bytes.NewReader(data))
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, magic
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			names = append(names, h.Name)
		}
		if h.Name == exe {
			magic = head(tr)
		}
	}
}
