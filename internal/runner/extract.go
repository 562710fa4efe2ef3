package runner

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// extractTarGz unpacks archive into dest, which must be an empty directory. It refuses the whole
// archive on an absolute path, a path that leaves dest, a symlink whose target leaves dest, an
// entry reached through a symlink, or an entry type other than file, directory, symlink and
// hardlink. All writes go through an os.Root, so even a check missed here cannot write outside.
// Write bits are dropped from files: runtime directories hardlink them, and a runner writing to a
// package file in place must fail rather than change every runtime directory sharing the inode.
func extractTarGz(ctx context.Context, archive, dest string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("not a gzip archive: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	return extractEach(ctx, dest, func() (*tar.Header, io.Reader, error) {
		hdr, err := tr.Next()
		if err != nil && !errors.Is(err, io.EOF) {
			err = fmt.Errorf("read archive: %w", err)
		}
		return hdr, tr, err
	})
}

// extractEach writes the entries next returns, until it returns io.EOF, into dest through one extractor,
// checking ctx before each: the one loop of every archive format. next gives an entry as the
// tar header it stands for and its content; a content that is an io.Closer is closed once written.
func extractEach(ctx context.Context, dest string, next func() (*tar.Header, io.Reader, error)) error {
	x, err := newExtractor(dest)
	if err != nil {
		return err
	}
	defer x.root.Close()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, body, err := next()
		if err == io.EOF { // only io.EOF itself ends it: an error wrapping one is a failed read
			return nil
		}
		if err != nil {
			return err
		}
		err = x.entry(hdr, body)
		if c, ok := body.(io.Closer); ok {
			c.Close()
		}
		if err != nil {
			return fmt.Errorf("archive entry %q: %w", hdr.Name, err)
		}
	}
}

type extractor struct {
	root     *os.Root
	symlinks map[string]bool // entries created as symlinks, by cleaned name
}

// newExtractor writes into dest through an os.Root; the caller closes x.root.
func newExtractor(dest string) (extractor, error) {
	root, err := os.OpenRoot(dest)
	if err != nil {
		return extractor{}, err
	}
	return extractor{root: root, symlinks: map[string]bool{}}, nil
}

// localName cleans an archive path and checks that it stays inside the root and does not pass
// through a symlink created earlier (which would make the lexical check meaningless).
func (x *extractor) localName(name string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(name))
	if filepath.IsAbs(clean) || !filepath.IsLocal(clean) {
		return "", errors.New("path is absolute or leaves the package directory")
	}
	for dir := filepath.Dir(clean); dir != "."; dir = filepath.Dir(dir) {
		if x.symlinks[dir] {
			return "", fmt.Errorf("path goes through symlink %q", dir)
		}
	}
	return clean, nil
}

func (x *extractor) entry(hdr *tar.Header, body io.Reader) error {
	if filepath.Clean(filepath.FromSlash(hdr.Name)) == "." {
		return nil // the archive's own root ("./")
	}
	name, err := x.localName(hdr.Name)
	if err != nil {
		return err
	}
	if err := x.mkdirParents(name); err != nil {
		return err
	}
	perm := hdr.FileInfo().Mode().Perm()
	switch hdr.Typeflag {
	case tar.TypeDir:
		// Owner keeps rwx so the cache can be pruned and later entries can be written.
		if err := x.root.MkdirAll(name, 0o755); err != nil {
			return err
		}
		return x.root.Chmod(name, perm|0o700)
	case tar.TypeReg:
		out, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if err := copyAndClose(out, body); err != nil {
			return err
		}
		return x.root.Chmod(name, perm&^0o222)
	case tar.TypeSymlink:
		target := filepath.FromSlash(hdr.Linkname)
		if filepath.IsAbs(target) || !filepath.IsLocal(filepath.Join(filepath.Dir(name), target)) {
			return fmt.Errorf("symlink target %q leaves the package directory", hdr.Linkname)
		}
		x.symlinks[name] = true
		return x.root.Symlink(target, name)
	case tar.TypeLink:
		target, err := x.localName(hdr.Linkname)
		if err != nil {
			return fmt.Errorf("hardlink target: %w", err)
		}
		if x.symlinks[target] {
			return fmt.Errorf("hardlink to symlink %q", hdr.Linkname)
		}
		return x.root.Link(target, name)
	default:
		return fmt.Errorf("unsupported entry type %q (only files, directories and links belong in a runner package)",
			string(hdr.Typeflag))
	}
}

// mkdirParents creates the directories above name that the archive did not list first.
func (x *extractor) mkdirParents(name string) error {
	dir := filepath.Dir(name)
	if dir == "." {
		return nil
	}
	if err := x.root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create parent directory: %w", err)
	}
	return nil
}

// isUnder reports whether path is strictly inside dir (both absolute and clean).
func isUnder(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && filepath.IsLocal(rel)
}
