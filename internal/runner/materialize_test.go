//go:build unix

package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}

func TestMaterializeHardlinksFiles(t *testing.T) {
	t.Parallel()
	c, pkg, _, _ := cachedPackage(t)
	rt := filepath.Join(t.TempDir(), "runs", "attempt-1")
	if err := c.Materialize(context.Background(), pkg, rt); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"run.sh", "bin/Runner.Listener", "externals/node/bin/npm-cli.js"} {
		if inode(t, filepath.Join(pkg, f)) != inode(t, filepath.Join(rt, f)) {
			t.Errorf("%s is not a hardlink to the cache", f)
		}
	}
	if info, err := os.Stat(filepath.Join(rt, "run.sh")); err != nil || info.Mode().Perm()&0o111 != 0o111 {
		t.Fatalf("run.sh lost its exec bits: %v %v", info.Mode(), err)
	}
	if link, err := os.Readlink(filepath.Join(rt, "externals/node/bin/npm")); err != nil || link != "npm-cli.js" {
		t.Errorf("symlink = %q, %v", link, err)
	}
	for _, d := range []string{"_work", "_diag", "bin"} {
		info, err := os.Lstat(filepath.Join(rt, d))
		if err != nil || !info.IsDir() || info.Mode().Perm()&0o200 == 0 {
			t.Errorf("%s: want a writable directory of its own, got %v %v", d, info, err)
		}
	}
	if inode(t, filepath.Join(pkg, "bin")) == inode(t, filepath.Join(rt, "bin")) {
		t.Error("a directory was shared with the cache")
	}
}

func TestMaterializeCopiesWhenLinksFail(t *testing.T) {
	t.Parallel()
	c, pkg, _, _ := cachedPackage(t)
	c.link = func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.EXDEV} }
	rt := filepath.Join(t.TempDir(), "attempt-2")
	if err := c.Materialize(context.Background(), pkg, rt); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"run.sh", "bin/Runner.Listener"} {
		src, dst := filepath.Join(pkg, f), filepath.Join(rt, f)
		if inode(t, src) == inode(t, dst) {
			t.Errorf("%s: linked, want a copy", f)
		}
		a, _ := os.ReadFile(src)
		b, err := os.ReadFile(dst)
		si, _ := os.Stat(src)
		di, _ := os.Stat(dst)
		if err != nil || string(a) != string(b) || si.Mode() != di.Mode() {
			t.Errorf("%s: copy differs in content or mode (%v vs %v)", f, si.Mode(), di.Mode())
		}
	}
}

func TestMaterializeRefuses(t *testing.T) {
	t.Parallel()
	c, pkg, _, _ := cachedPackage(t)
	existing := t.TempDir()
	if err := c.Materialize(context.Background(), pkg, existing); !errors.Is(err, os.ErrExist) {
		t.Errorf("existing runtime dir: %v, want ErrExist", err)
	}
	if err := c.Materialize(context.Background(), t.TempDir(), filepath.Join(t.TempDir(), "x")); err == nil ||
		!strings.Contains(err.Error(), "not a package in the cache") {
		t.Errorf("source outside the cache: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rt := filepath.Join(t.TempDir(), "cancelled")
	if err := c.Materialize(ctx, pkg, rt); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := os.Stat(rt); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed Materialize left %s behind", rt)
	}
}
