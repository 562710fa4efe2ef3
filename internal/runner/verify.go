package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultVerifyInterval is how long a cached package's last verification counts: a launch after
// that hashes the package again first. A changed file thus reaches at most one interval of
// launches, and an idle host spends nothing.
const DefaultVerifyInterval = 15 * time.Minute

// ManifestDir (under the cache) holds one record per cached package, beside the packages (its leading dot keeps it
// out of Prune's listing). A record is written before its package is published, from the files the
// verified archive produced.
const ManifestDir = ".manifests"

// Reasons a cached package was discarded, as passed to CacheOptions.OnDiscard.
const (
	DiscardModified   = "modified"   // its files no longer match its record
	DiscardUnrecorded = "unrecorded" // no record (cached by an older runner-manager, or the record is unreadable)
)

// DiscardReasons lists every reason OnDiscard may be given.
var DiscardReasons = []string{DiscardModified, DiscardUnrecorded}

// manifest is the record of one cached package: GitHub's digest of the archive it came from, and
// every entry extracted from it.
type manifest struct {
	Package       string          `json:"package"`
	ArchiveSHA256 string          `json:"archive_sha256"`
	Entries       []manifestEntry `json:"entries"`
}

// manifestEntry is one path of a package directory: its type and permissions, and the sha256 of a
// file's content or a symlink's target.
type manifestEntry struct {
	Path   string `json:"path"`
	Type   string `json:"type"` // "dir", "file", "symlink"
	Mode   uint32 `json:"mode"`
	SHA256 string `json:"sha256,omitempty"`
	Target string `json:"target,omitempty"`
}

// errUnrecorded marks a package without a usable record.
var errUnrecorded = errors.New("no verification record")

func (c *Cache) manifestPath(key string) string {
	return filepath.Join(c.dir, ManifestDir, key+".json")
}

// recordTree lists dir's entries in walk (lexical) order, hashing every regular file. It is the
// one description of a package both the record and every re-verification are made of.
func recordTree(dir string) ([]manifestEntry, error) {
	var entries []manifestEntry
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, werr error) error {
		if werr != nil {
			return werr
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := manifestEntry{Path: filepath.ToSlash(rel), Mode: uint32(info.Mode().Perm())}
		switch {
		case d.IsDir():
			e.Type = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			e.Type = "symlink"
			if e.Target, err = os.Readlink(path); err != nil {
				return err
			}
		case d.Type().IsRegular():
			e.Type = "file"
			if e.SHA256, err = fileSHA256(path); err != nil {
				return err
			}
		default:
			e.Type = d.Type().String()
		}
		entries = append(entries, e)
		return nil
	})
	return entries, err
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeManifest records the package extracted into dir (not yet published) as package p.
func (c *Cache) writeManifest(p Package, dir string) error {
	entries, err := recordTree(dir)
	if err != nil {
		return fmt.Errorf("record runner package %s: %w", p.Key(), err)
	}
	m := manifest{Package: p.Key(), ArchiveSHA256: strings.ToLower(p.SHA256), Entries: entries}
	if err := os.MkdirAll(filepath.Join(c.dir, ManifestDir), 0o700); err != nil {
		return fmt.Errorf("record runner package %s: %w", p.Key(), err)
	}
	return writeJSONAtomic(filepath.Join(c.dir, ManifestDir), p.Key()+".json", m)
}

// verify checks the cached package dir of p against its record: the same archive digest as p's
// (GitHub's), and every entry present, unchanged and nothing added. The error names the first
// path that differs; errUnrecorded is in its chain when there is no usable record.
func (c *Cache) verify(p Package, dir string) error {
	var m manifest
	data, err := os.ReadFile(c.manifestPath(p.Key()))
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errUnrecorded, err)
	}
	if !strings.EqualFold(m.ArchiveSHA256, p.SHA256) {
		return fmt.Errorf("%s was extracted from an archive with sha256 %s, but GitHub now publishes %s", dir, m.ArchiveSHA256, strings.ToLower(p.SHA256))
	}
	got, err := recordTree(dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	want := make(map[string]manifestEntry, len(m.Entries))
	for _, e := range m.Entries {
		want[e.Path] = e
	}
	for _, e := range got {
		w, ok := want[e.Path]
		path := filepath.Join(dir, filepath.FromSlash(e.Path))
		switch {
		case !ok:
			return fmt.Errorf("%s is not part of the package", path)
		case w.Type != e.Type:
			return fmt.Errorf("%s is a %s, the package has a %s there", path, e.Type, w.Type)
		case w.Mode != e.Mode:
			return fmt.Errorf("%s has mode %04o, the package gave it %04o", path, e.Mode, w.Mode)
		case w.SHA256 != e.SHA256:
			return fmt.Errorf("%s has sha256 %s, the package's file has %s", path, e.SHA256, w.SHA256)
		case w.Target != e.Target:
			return fmt.Errorf("%s points to %q, the package's link to %q", path, e.Target, w.Target)
		}
		delete(want, e.Path)
	}
	for _, e := range m.Entries {
		if _, ok := want[e.Path]; ok {
			return fmt.Errorf("%s is missing", filepath.Join(dir, filepath.FromSlash(e.Path)))
		}
	}
	return nil
}

// checkCached decides whether the cached package dir of p may be used: yes when it was verified
// within the interval or verifies now; otherwise it is discarded (logged, counted) and the caller
// downloads it again. Runtime directories already made from it keep their own links and copies.
// The caller holds p's key lock.
func (c *Cache) checkCached(p Package, dir string) (bool, error) {
	key := p.Key()
	c.mu.Lock()
	at, ok := c.verified[key]
	c.mu.Unlock()
	now := c.opts.Now()
	if ok && now.Sub(at) < c.opts.VerifyInterval {
		return true, nil
	}
	err := c.verify(p, dir)
	if err == nil {
		c.mu.Lock()
		c.verified[key] = now
		c.mu.Unlock()
		return true, nil
	}
	reason := DiscardModified
	if errors.Is(err, errUnrecorded) {
		reason = DiscardUnrecorded
		c.opts.Logger.Warn("cached runner package has no verification record (cached by an older runner-manager?); discarding it, the launch downloads it again",
			"package", key, "version", p.Version, "dir", dir, "err", err)
	} else {
		c.opts.Logger.Error("cached runner package failed re-verification: a file changed since it was downloaded; discarding it, the launch downloads it again (running runners are not touched). Find out who could write to the cache",
			"package", key, "version", p.Version, "dir", dir, "problem", err)
	}
	if c.opts.OnDiscard != nil {
		c.opts.OnDiscard(key, reason)
	}
	if err := c.remove(key); err != nil {
		return false, fmt.Errorf("discard cached runner package %s, which failed verification: %w; remove %s by hand", key, err, dir)
	}
	return false, nil
}

// remove deletes a cached package, its record and its verification time; the caller holds its
// key lock.
func (c *Cache) remove(key string) error {
	c.mu.Lock()
	delete(c.verified, key)
	c.mu.Unlock()
	if err := os.RemoveAll(filepath.Join(c.dir, key)); err != nil {
		return err
	}
	if err := os.Remove(c.manifestPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
