package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
)

// Package names one runner package as the GitHub runner-downloads API describes it.
type Package struct {
	Version string // e.g. "2.319.1"
	OS      string // GitHub's spelling: "linux", "osx", "win"
	Arch    string // GitHub's spelling: "x64", "arm64"
	URL     string // the download URL: a .tar.gz, or a .zip for "win" (layout)
	SHA256  string // hex digest of the archive, from GitHub
}

// Key is the package's directory name in the cache: "<version>-<os>-<arch>".
func (p Package) Key() string { return p.Version + "-" + p.OS + "-" + p.Arch }

// keyPart is what a version, OS or arch may look like: it becomes a directory name, so no
// separators, no leading dot (temp files start with one) and nothing empty.
var keyPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

func (p Package) validate() error {
	for name, v := range map[string]string{"version": p.Version, "os": p.OS, "arch": p.Arch} {
		if !keyPart.MatchString(v) {
			return fmt.Errorf("runner package %s %q is not a plain name (letters, digits, . _ + -)", name, v)
		}
	}
	if p.URL == "" {
		return fmt.Errorf("runner package %s has no download URL", p.Key())
	}
	if len(p.SHA256) != 64 {
		return fmt.Errorf("runner package %s: sha256 must be 64 hex digits, got %d characters", p.Key(), len(p.SHA256))
	}
	return nil
}

// Temp names in the cache start with these prefixes; NewCache removes leftovers of a crash.
const (
	downloadPrefix = ".download-"
	extractPrefix  = ".extract-"
)

// CacheOptions configures a Cache. Zero values are sensible defaults.
type CacheOptions struct {
	HTTPClient *http.Client // default http.DefaultClient; its Timeout should be 0 or generous (downloads are ~200 MB)
	Logger     *slog.Logger // default slog.Default()
	// Progress receives a progress bar while a package downloads, when it is a terminal.
	// Nil, or a non-terminal writer, means progress is only logged.
	Progress io.Writer
	// LogInterval is how often download progress is logged; default 5 s.
	LogInterval time.Duration
	// StallTimeout aborts a download that receives no byte for this long; default 60 s. (The HTTP
	// client's own Timeout would cap the whole download, which a slow link legitimately exceeds.)
	StallTimeout time.Duration
	Now          func() time.Time // default time.Now; the clock of the progress log and of VerifyInterval
	// VerifyInterval is how long a cached package's verification against its record counts before
	// a launch hashes it again; default DefaultVerifyInterval. The first use after start verifies.
	VerifyInterval time.Duration
	// OnDiscard, when set, is told of every cached package discarded because it failed
	// verification (reason DiscardModified or DiscardUnrecorded); the daemon counts them.
	OnDiscard func(key, reason string)
}

// Cache holds extracted runner packages under one directory, one subdirectory per package key.
// A directory named by Key exists only once its package was fully downloaded, verified and
// extracted: readers never see a partial package. Safe for concurrent use by one process (the
// daemon holds the host lock, so there is one process per cache).
type Cache struct {
	dir  string
	opts CacheOptions
	// link creates hardlinks for Materialize; tests replace it to exercise the copy fallback.
	link  func(oldname, newname string) error
	isTTY func(io.Writer) bool

	mu       sync.Mutex
	locks    map[string]chan struct{} // per-key lock: one download per key; Prune skips held keys
	verified map[string]time.Time     // key -> when it last matched its record (this process only)
}

// NewCache creates (if needed) and opens the cache at dir, removing temp files a crashed
// process left behind, so a partial download is never left on disk.
func NewCache(dir string, opts CacheOptions) (*Cache, error) {
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LogInterval <= 0 {
		opts.LogInterval = 5 * time.Second
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = 60 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.VerifyInterval <= 0 {
		opts.VerifyInterval = DefaultVerifyInterval
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("runner package cache %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create runner package cache %s (check the state directory's permissions): %w", abs, err)
	}
	c := &Cache{
		dir: abs, opts: opts, link: os.Link, isTTY: isTerminal,
		locks: map[string]chan struct{}{}, verified: map[string]time.Time{},
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("read runner package cache %s: %w", abs, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), downloadPrefix) || strings.HasPrefix(e.Name(), extractPrefix) {
			if err := os.RemoveAll(filepath.Join(abs, e.Name())); err != nil {
				return nil, fmt.Errorf("remove leftover %s from the runner package cache: %w", e.Name(), err)
			}
		}
	}
	if err := c.removeOrphanRecords(); err != nil {
		return nil, err
	}
	return c, nil
}

// removeOrphanRecords drops records whose package is gone (a crash between recording and
// publishing, or between removing a package and its record).
func (c *Cache) removeOrphanRecords() error {
	entries, err := os.ReadDir(filepath.Join(c.dir, ManifestDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the runner package records in %s: %w", c.dir, err)
	}
	for _, e := range entries {
		key, ok := strings.CutSuffix(e.Name(), ".json")
		if _, serr := os.Stat(filepath.Join(c.dir, key)); ok && serr == nil {
			continue
		}
		if err := os.RemoveAll(filepath.Join(c.dir, ManifestDir, e.Name())); err != nil {
			return fmt.Errorf("remove the stale runner package record %s: %w", e.Name(), err)
		}
	}
	return nil
}

// Dir is the cache's absolute directory.
func (c *Cache) Dir() string { return c.dir }

// Ensure returns the directory holding package p extracted, downloading, verifying and extracting
// it first if it is not cached. A cached package is re-verified against its record first when its
// last verification is older than VerifyInterval (or was never made by this process); one that
// fails is discarded and downloaded again. Concurrent calls for one key download once: the others
// wait (each bounded by its own ctx) and then find the directory. On any failure nothing of the
// attempt stays on disk.
func (c *Cache) Ensure(ctx context.Context, p Package) (string, error) {
	if err := p.validate(); err != nil {
		return "", err
	}
	key := p.Key()
	final := filepath.Join(c.dir, key)
	unlock, err := c.lockKey(ctx, key)
	if err != nil {
		return "", fmt.Errorf("wait for runner package %s: %w", key, err)
	}
	defer unlock()
	if _, err := os.Stat(final); err == nil {
		ok, err := c.checkCached(p, final)
		if err != nil {
			return "", err
		}
		if ok {
			return final, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("runner package cache %s: %w", final, err)
	}
	archive, err := c.download(ctx, p)
	if err != nil {
		return "", err
	}
	defer os.Remove(archive)
	tmpDir, err := os.MkdirTemp(c.dir, extractPrefix+key+"-")
	if err != nil {
		return "", fmt.Errorf("extract runner package %s: %w", key, err)
	}
	defer os.RemoveAll(tmpDir) // no-op once renamed
	if err := extractArchive(ctx, layoutOfPackage(p.OS).archive, archive, tmpDir); err != nil {
		return "", fmt.Errorf("extract runner package %s from %s: %w", key, redactURL(p.URL), err)
	}
	if err := os.Chmod(tmpDir, 0o755); err != nil {
		return "", fmt.Errorf("extract runner package %s: %w", key, err)
	}
	// Recorded before it is published, so a published package always has its record.
	if err := c.writeManifest(p, tmpDir); err != nil {
		return "", err
	}
	if err := os.Rename(tmpDir, final); err != nil {
		return "", fmt.Errorf("publish runner package %s in the cache: %w", key, err)
	}
	if err := atomicfile.SyncDir(c.dir); err != nil {
		return "", err
	}
	c.mu.Lock()
	c.verified[key] = c.opts.Now()
	c.mu.Unlock()
	c.opts.Logger.Info("runner package ready", "package", key, "dir", final)
	return final, nil
}

// keyLock returns the lock channel of key: holding it means sending into it.
func (c *Cache) keyLock(key string) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.locks[key]
	if !ok {
		ch = make(chan struct{}, 1)
		c.locks[key] = ch
	}
	return ch
}

// lockKey takes the per-key lock, giving up when ctx ends.
func (c *Cache) lockKey(ctx context.Context, key string) (func(), error) {
	ch := c.keyLock(key)
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Prune removes every cached package whose key keep rejects, except packages being ensured right
// now, and returns the keys it removed. keep must accept every package a live attempt uses or a
// launch is about to use. (Runtime directories hardlink their files, so pruning a version a live
// runner still runs would not break it, only cost a download next time.)
func (c *Cache) Prune(ctx context.Context, keep func(key string) bool) ([]string, error) {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("read runner package cache %s: %w", c.dir, err)
	}
	var removed []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || keep(name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return removed, fmt.Errorf("prune runner package cache: %w", err)
		}
		ch := c.keyLock(name)
		select {
		case ch <- struct{}{}:
		default:
			continue // being ensured right now: it is wanted
		}
		err := c.remove(name)
		<-ch
		if err != nil {
			return removed, fmt.Errorf("prune runner package %s: %w", name, err)
		}
		c.opts.Logger.Info("pruned runner package", "package", name)
		removed = append(removed, name)
	}
	return removed, nil
}
