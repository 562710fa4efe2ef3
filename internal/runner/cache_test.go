package runner

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

type tarEntry struct {
	name, body, link string
	typ              byte
	mode             int64
}

func buildTarGz(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		typ, mode := e.typ, e.mode
		if typ == 0 {
			typ = tar.TypeReg
		}
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Mode: mode, Linkname: e.link, Size: int64(len(e.body))}
		if typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// runnerPackage looks like a (tiny) actions/runner tarball.
var runnerPackage = []tarEntry{
	{name: "./", typ: tar.TypeDir, mode: 0o755},
	{name: "./run.sh", body: "#!/bin/sh\nexit 0\n", mode: 0o755},
	{name: "./config.sh", body: "#!/bin/sh\n", mode: 0o755},
	{name: "./bin/", typ: tar.TypeDir, mode: 0o755},
	{name: "./bin/Runner.Listener", body: strings.Repeat("listener", 4096), mode: 0o755},
	{name: "./bin/runner.json", body: "{}", mode: 0o644},
	{name: "./externals/node/bin/npm-cli.js", body: "//", mode: 0o644},
	{name: "./externals/node/bin/npm", typ: tar.TypeSymlink, link: "npm-cli.js"},
	{name: "./bin/Runner.Worker", typ: tar.TypeLink, link: "./bin/Runner.Listener"},
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

type pkgServer struct {
	*httptest.Server
	hits atomic.Int32
}

func servePackage(t *testing.T, h http.HandlerFunc) *pkgServer {
	t.Helper()
	s := &pkgServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func serveBytes(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }
}

func newTestCache(t *testing.T, opts CacheOptions) *Cache {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := NewCache(filepath.Join(t.TempDir(), "cache"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testPackage(url string, body []byte) Package {
	return Package{Version: "2.319.1", OS: "linux", Arch: "x64", URL: url + "/actions-runner.tar.gz?sig=secret", SHA256: sha(body)}
}

// cacheEntries lists what is in the cache directory but the records (cacheRecords lists those),
// so tests can assert nothing was left.
func cacheEntries(t *testing.T, c *Cache) []string {
	t.Helper()
	entries, err := os.ReadDir(c.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != ManifestDir {
			names = append(names, e.Name())
		}
	}
	return names
}

// cacheRecords lists the verification records in the cache.
func cacheRecords(t *testing.T, c *Cache) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(c.Dir(), ManifestDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestEnsureDownloadsVerifiesAndExtractsOnce(t *testing.T) {
	t.Parallel()
	c, dir, srv, p := cachedPackage(t)
	if dir != filepath.Join(c.Dir(), "2.319.1-linux-x64") {
		t.Fatalf("dir = %s", dir)
	}
	if again, err := c.Ensure(context.Background(), p); err != nil || again != dir || srv.hits.Load() != 1 {
		t.Fatalf("second Ensure = %s, %v, %d downloads; want the cached dir and one download", again, err, srv.hits.Load())
	}
	if got := cacheEntries(t, c); len(got) != 1 {
		t.Fatalf("cache holds %v, want only the extracted package", got)
	}
	modes := map[string]os.FileMode{"run.sh": 0o555, "bin/runner.json": 0o444, "bin/Runner.Listener": 0o555}
	for name, want := range modes {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v (exec bits kept, write bits dropped)", name, info.Mode().Perm(), want)
		}
	}
	if link, err := os.Readlink(filepath.Join(dir, "externals/node/bin/npm")); err != nil || link != "npm-cli.js" {
		t.Errorf("symlink = %q, %v", link, err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "bin/Runner.Worker")); err != nil || len(data) != 8*4096 {
		t.Errorf("hardlinked entry: %d bytes, %v", len(data), err)
	}
}

func TestConcurrentEnsureDownloadsOnce(t *testing.T) {
	t.Parallel()
	body := buildTarGz(t, runnerPackage)
	release := make(chan struct{})
	srv := servePackage(t, func(w http.ResponseWriter, _ *http.Request) {
		<-release
		_, _ = w.Write(body)
	})
	c := newTestCache(t, CacheOptions{})
	p := testPackage(srv.URL, body)
	const n = 8
	var started, done sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			started.Done()
			_, err := c.Ensure(context.Background(), p)
			errs <- err
		}()
	}
	started.Wait()
	livetest.Eventually(t, "the first download to reach the server", func() bool { return srv.hits.Load() >= 1 })
	close(release)
	done.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.hits.Load(); got != 1 {
		t.Fatalf("%d downloads for %d concurrent Ensure calls, want 1", got, n)
	}
}

// A corrupt or partial download is never extracted and never left behind.
func TestEnsureDiscardsBadDownloads(t *testing.T) {
	t.Parallel()
	body := buildTarGz(t, runnerPackage)
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"bad checksum", serveBytes(append(bytes.Clone(body), 0)), "failed verification"},
		{"truncated body", serveBytes(body[:len(body)/2]), "failed verification"},
		{"server error status", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "boom", http.StatusBadGateway)
		}, "502 Bad Gateway"},
		{"connection dropped mid-body", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "1000000")
			_, _ = w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}, "after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := servePackage(t, tt.handler)
			c := newTestCache(t, CacheOptions{})
			_, err := c.Ensure(context.Background(), testPackage(srv.URL, body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Ensure = %v, want error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "sig=secret") {
				t.Fatalf("error leaks the URL's query: %v", err)
			}
			if got := cacheEntries(t, c); len(got) != 0 {
				t.Fatalf("cache holds %v after a failed download", got)
			}
		})
	}
}

func TestEnsureCancelledMidDownloadLeavesNothing(t *testing.T) {
	t.Parallel()
	body := buildTarGz(t, runnerPackage)
	halfSent := make(chan struct{})
	srv := servePackage(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		_, _ = w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		close(halfSent)
		<-r.Context().Done()
	})
	c := newTestCache(t, CacheOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Ensure(ctx, testPackage(srv.URL, body))
		errc <- err
	}()
	<-halfSent
	livetest.Eventually(t, "the partial download on disk", func() bool { return len(cacheEntries(t, c)) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Ensure = %v, want context.Canceled", err)
	}
	if got := cacheEntries(t, c); len(got) != 0 {
		t.Fatalf("cache holds %v after a cancelled download", got)
	}
}

func TestNewCacheRemovesCrashLeftovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{".download-2.1-linux-x64-123", ".extract-2.1-linux-x64-456/bin"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "2.0-linux-x64"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Records: the complete package's, one whose package is gone, a torn write's temp file.
	for _, name := range []string{"2.0-linux-x64.json", "2.1-linux-x64.json", ".2.2-linux-x64.json.tmp-789"} {
		if err := os.MkdirAll(filepath.Join(dir, ManifestDir), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ManifestDir, name), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := NewCache(dir, CacheOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if got := cacheEntries(t, c); len(got) != 1 || got[0] != "2.0-linux-x64" {
		t.Fatalf("cache holds %v, want only the complete package", got)
	}
	if got := cacheRecords(t, c); len(got) != 1 || got[0] != "2.0-linux-x64.json" {
		t.Fatalf("records %v, want only the complete package's", got)
	}
}

func TestEnsureRejectsBadPackages(t *testing.T) {
	t.Parallel()
	c := newTestCache(t, CacheOptions{})
	good := Package{Version: "2.1", OS: "linux", Arch: "x64", URL: "http://127.0.0.1:1/x", SHA256: strings.Repeat("a", 64)}
	tests := map[string]func(*Package){
		"version with slash": func(p *Package) { p.Version = "../2.1" },
		"empty arch":         func(p *Package) { p.Arch = "" },
		"hidden os":          func(p *Package) { p.OS = ".linux" },
		"no url":             func(p *Package) { p.URL = "" },
		"short sha":          func(p *Package) { p.SHA256 = "abc" },
	}
	for name, mutate := range tests {
		p := good
		mutate(&p)
		if _, err := c.Ensure(context.Background(), p); err == nil {
			t.Errorf("%s: Ensure accepted %+v", name, p)
		}
	}
}

func TestPruneRemovesUnwantedVersions(t *testing.T) {
	t.Parallel()
	c, old, cur := cacheOfTwoVersions(t)
	removed, err := c.Prune(context.Background(), func(key string) bool { return key == cur.Key() })
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != old.Key() {
		t.Fatalf("removed %v, want [%s]", removed, old.Key())
	}
	if got := cacheEntries(t, c); len(got) != 1 || got[0] != cur.Key() {
		t.Fatalf("cache holds %v", got)
	}
	if got := cacheRecords(t, c); len(got) != 1 || got[0] != cur.Key()+".json" {
		t.Fatalf("records %v, want only %s's", got, cur.Key())
	}
}

// A package being ensured right now is never pruned, even if keep does not list it.
func TestPruneSkipsPackageBeingEnsured(t *testing.T) {
	t.Parallel()
	c := newTestCache(t, CacheOptions{})
	if err := os.Mkdir(filepath.Join(c.Dir(), "2.1-linux-x64"), 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := c.lockKey(context.Background(), "2.1-linux-x64")
	if err != nil {
		t.Fatal(err)
	}
	removed, err := c.Prune(context.Background(), func(string) bool { return false })
	unlock()
	if err != nil || len(removed) != 0 {
		t.Fatalf("Prune = %v, %v; want nothing removed while the key is held", removed, err)
	}
}

type fakeClock struct{ now time.Time }

func (f *fakeClock) Now() time.Time { f.now = f.now.Add(time.Second); return f.now }

func TestDownloadProgressIsLoggedAndDrawnOnATerminal(t *testing.T) {
	t.Parallel()
	_, pkg := servedPackage(t)
	var logs, bar bytes.Buffer
	clock := &fakeClock{now: time.Unix(0, 0)}
	c := newTestCache(t, CacheOptions{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Progress: &bar, LogInterval: time.Second, Now: clock.Now,
	})
	c.isTTY = func(io.Writer) bool { return true }
	if _, err := c.Ensure(context.Background(), pkg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"downloading runner package", "bytes_per_second=", "downloaded runner package"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "sig=secret") {
		t.Errorf("log leaks the URL's query:\n%s", logs.String())
	}
	if !strings.Contains(bar.String(), "runner 2.319.1-linux-x64") {
		t.Errorf("no progress bar drawn on the terminal: %q", bar.String())
	}
}

func TestNoProgressBarWithoutATerminal(t *testing.T) {
	t.Parallel()
	_, pkg := servedPackage(t)
	var bar bytes.Buffer
	c := newTestCache(t, CacheOptions{Progress: &bar})
	if _, err := c.Ensure(context.Background(), pkg); err != nil {
		t.Fatal(err)
	}
	if bar.Len() != 0 {
		t.Fatalf("progress bar drawn on a non-terminal: %q", bar.String())
	}
}

// A download that stops receiving data is abandoned, not waited on forever.
func TestEnsureAbandonsStalledDownload(t *testing.T) {
	t.Parallel()
	body := buildTarGz(t, runnerPackage)
	srv := servePackage(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		_, _ = w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c := newTestCache(t, CacheOptions{StallTimeout: 200 * time.Millisecond})
	_, err := c.Ensure(context.Background(), testPackage(srv.URL, body))
	if !errors.Is(err, errStalled) || !strings.Contains(err.Error(), "no data for 200ms") {
		t.Fatalf("Ensure = %v, want a stall error", err)
	}
	if got := cacheEntries(t, c); len(got) != 0 {
		t.Fatalf("cache holds %v after a stalled download", got)
	}
}

// servedPackage serves the test runner package and returns the server and the package's Package.
func servedPackage(t *testing.T) (*pkgServer, Package) {
	t.Helper()
	body := buildTarGz(t, runnerPackage)
	srv := servePackage(t, serveBytes(body))
	return srv, testPackage(srv.URL, body)
}

// cachedPackage is a fresh cache holding the served test package: the cache, the package's
// directory in it, the package's server and its Package.
func cachedPackage(t *testing.T) (*Cache, string, *pkgServer, Package) {
	t.Helper()
	srv, p := servedPackage(t)
	c := newTestCache(t, CacheOptions{})
	dir, err := c.Ensure(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return c, dir, srv, p
}

// cacheOfTwoVersions is a fresh cache holding the test package as two versions, old (2.300.0)
// and cur.
func cacheOfTwoVersions(t *testing.T) (c *Cache, old, cur Package) {
	t.Helper()
	_, cur = servedPackage(t)
	old = cur
	old.Version = "2.300.0"
	c = newTestCache(t, CacheOptions{})
	for _, p := range []Package{old, cur} {
		if _, err := c.Ensure(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	return c, old, cur
}
