package runner

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileArchive is a package the cache must refuse whole, and what the refusal says.
type hostileArchive struct {
	name    string
	entries []tarEntry
	want    string
}

// hostileInEveryFormat are the hostile packages a zip can hold as well as a tarball: a zip is
// refused by the same rules (TestEnsureRefusesHostileZips writes each one as a zip).
var hostileInEveryFormat = []hostileArchive{
	{"absolute path", []tarEntry{{name: "/tmp/evil", body: "x"}}, "absolute or leaves"},
	{"dot-dot path", []tarEntry{{name: "bin/../../evil", body: "x"}}, "absolute or leaves"},
	{"absolute symlink", []tarEntry{{name: "etc", typ: tar.TypeSymlink, link: "/etc"}}, "symlink target"},
	{"escaping symlink", []tarEntry{{name: "bin/up", typ: tar.TypeSymlink, link: "../../.."}}, "symlink target"},
	{"write through symlink", []tarEntry{
		{name: "bin/self", typ: tar.TypeSymlink, link: "."},
		{name: "bin/self/x", body: "x"},
	}, "through symlink"},
	{"symlink chain out", []tarEntry{
		{name: "a/b", typ: tar.TypeSymlink, link: ".."},
		{name: "a/b/c", typ: tar.TypeSymlink, link: ".."},
	}, "through symlink"},
	{"duplicate entry", []tarEntry{{name: "run.sh", body: "a"}, {name: "run.sh", body: "b"}}, "file exists"},
}

// Every hostile archive is refused whole: nothing is written outside the cache, no package
// directory appears, no temp file stays.
func TestEnsureRefusesHostileArchives(t *testing.T) {
	t.Parallel()
	refusesEach(t, append([]hostileArchive{
		{"hardlink outside", []tarEntry{{name: "passwd", typ: tar.TypeLink, link: "../../../etc/passwd"}}, "hardlink target"},
		{"hardlink to symlink", []tarEntry{
			{name: "l", typ: tar.TypeSymlink, link: "run.sh"},
			{name: "h", typ: tar.TypeLink, link: "l"},
		}, "hardlink to symlink"},
		{"device node", []tarEntry{{name: "dev", typ: tar.TypeChar}}, "unsupported entry type"},
	}, hostileInEveryFormat...), buildTarGz, testPackage)
}

// refusesEach checks, in a subtest each, that every archive built by build and served as the
// package pkg names is refused (ensureRefused).
func refusesEach(t *testing.T, archives []hostileArchive, build func(*testing.T, []tarEntry) []byte, pkg func(url string, body []byte) Package) {
	for _, a := range archives {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			ensureRefused(t, build(t, a.entries), pkg, a.want)
		})
	}
}

// ensureRefused serves body as the package pkg names and checks that Ensure refuses it with an
// error containing want, leaving nothing in the cache and nothing beside it.
func ensureRefused(t *testing.T, body []byte, pkg func(url string, body []byte) Package, want string) {
	t.Helper()
	srv := servePackage(t, serveBytes(body))
	c := newTestCache(t, CacheOptions{})
	_, err := c.Ensure(context.Background(), pkg(srv.URL, body))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Ensure = %v, want error containing %q", err, want)
	}
	if got := cacheEntries(t, c); len(got) != 0 {
		t.Fatalf("cache holds %v after a refused archive", got)
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(c.Dir()), "evil")); err == nil {
		t.Fatal("an entry was written outside the cache")
	}
}

func TestEnsureRefusesNonGzip(t *testing.T) {
	t.Parallel()
	ensureRefused(t, []byte("PK\x03\x04 this is a zip"), testPackage, "gzip")
}

// FuzzExtractTarGz: whatever the archive, extraction never writes outside its destination.
func FuzzExtractTarGz(f *testing.F) {
	f.Add(buildTarGz(&testing.T{}, runnerPackage))
	f.Add(buildTarGz(&testing.T{}, []tarEntry{{name: "a/b", typ: tar.TypeSymlink, link: ".."}, {name: "a/b/c", body: "x"}}))
	f.Add(buildTarGz(&testing.T{}, []tarEntry{{name: "../x", body: "x"}}))
	f.Fuzz(func(t *testing.T, data []byte) { extractsInside(t, data, extractTarGz) })
}

// extractsInside runs extract on data and fails if anything appeared beside its destination.
func extractsInside(t *testing.T, data []byte, extract func(ctx context.Context, archive, dest string) error) {
	parent := t.TempDir()
	archive, dest := filepath.Join(parent, "archive"), filepath.Join(parent, "dest")
	if err := os.WriteFile(archive, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = extract(context.Background(), archive, dest)
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("extraction wrote outside its destination: %v", entries)
	}
}
