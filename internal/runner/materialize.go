package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// writableDirs are created in every runtime directory: the runner writes its job workspace and
// its diagnostic logs there, never into the (hardlinked, read-only) package files.
var writableDirs = []string{"_work", "_diag"}

// Materialize creates runtimeDir as a private copy of the cached package at versionDir, cheaply:
// every file is a hardlink to the cache (a copy when the two are on different filesystems or the
// filesystem refuses links), directories and symlinks are recreated, modes are kept. runtimeDir
// must not exist; its parent is created. On failure runtimeDir is removed again.
func (c *Cache) Materialize(ctx context.Context, versionDir, runtimeDir string) (err error) {
	src, err := filepath.Abs(versionDir)
	if err != nil || !isUnder(c.dir, src) {
		return fmt.Errorf("materialize runtime directory: %s is not a package in the cache %s", versionDir, c.dir)
	}
	dst, err := filepath.Abs(runtimeDir)
	if err != nil {
		return fmt.Errorf("materialize runtime directory %s: %w", runtimeDir, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("materialize runtime directory %s: create parent: %w", dst, err)
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("materialize runtime directory %s: it already exists (runtime directories are per attempt; remove it first): %w", dst, err)
		}
		return fmt.Errorf("materialize runtime directory %s: %w", dst, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dst)
		}
	}()
	copied := 0
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, werr error) error {
		if werr != nil {
			return werr
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			if c.link(path, target) == nil {
				return nil
			}
			copied++
			return copyFile(path, target, info.Mode().Perm())
		default:
			return fmt.Errorf("%s: unexpected file type %v in the package cache", path, d.Type())
		}
	})
	if err != nil {
		return fmt.Errorf("materialize runtime directory %s from %s: %w", dst, src, err)
	}
	for _, d := range writableDirs {
		if err := os.MkdirAll(filepath.Join(dst, d), 0o755); err != nil {
			return fmt.Errorf("materialize runtime directory %s: %w", dst, err)
		}
	}
	if copied > 0 {
		c.opts.Logger.Warn("hardlinks unavailable between cache and runtime directory; copied files instead (slower, uses more disk)",
			"cache", c.dir, "runtime_dir", dst, "files_copied", copied)
	}
	return nil
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := copyAndClose(out, in); err != nil {
		return err
	}
	return os.Chmod(dst, perm)
}

// copyAndClose copies r into out and closes out, reporting the first error.
func copyAndClose(out *os.File, r io.Reader) error {
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
