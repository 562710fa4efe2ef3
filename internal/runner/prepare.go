package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Prepare makes dir (below the runtime root) a fresh runtime directory for package p: it ensures
// p is cached, then materialises it. It is idempotent for an attempt that never started: a
// directory left by an interrupted Prepare (no shim.json) is replaced. A directory a shim has
// used is refused, since a runtime directory serves one runner only.
func (l *Launcher) Prepare(ctx context.Context, c *Cache, p Package, dir string) error {
	abs, err := l.inRoot(dir)
	if err != nil {
		return fmt.Errorf("prepare runtime directory: %w", err)
	}
	if _, err := os.Lstat(abs); err == nil {
		if _, err := ReadShimState(abs); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("prepare runtime directory %s: a shim already used it (or its shim.json is unreadable); it must be concluded and removed, not reused", abs)
		}
		if err := l.RemoveRuntimeDir(ctx, abs); err != nil {
			return fmt.Errorf("prepare runtime directory %s: remove the leftover of an interrupted prepare: %w", abs, err)
		}
	}
	pkgDir, err := c.Ensure(ctx, p)
	if err != nil {
		return err
	}
	if err := c.Materialize(ctx, pkgDir, RunnerRoot(abs)); err != nil {
		return err
	}
	// Others may pass through to a runner's own root, never list or write the attempt directory.
	if err := os.Chmod(abs, 0o711); err != nil {
		return fmt.Errorf("prepare runtime directory %s: %w", abs, err)
	}
	return nil
}
