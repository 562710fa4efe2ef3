//go:build linux

package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestRemoveRuntimeDirRefusesOutsideRoot(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	root := filepath.Join(parent, "runs")
	l := newTestLauncher(t, root)
	victim := filepath.Join(parent, "precious")
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(parent, "link")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{victim, root, root + "/..", root + "/../precious", "/", "relative/x", parent + "/runsx"} {
		if err := l.RemoveRuntimeDir(context.Background(), dir); !errors.Is(err, ErrOutsideRuntimeRoot) {
			t.Errorf("RemoveRuntimeDir(%q) = %v, want ErrOutsideRuntimeRoot", dir, err)
		}
	}
	// A symlink inside the root pointing out is removed as a link; its target survives.
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveRuntimeDir(context.Background(), filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the symlink's target was removed: %v", err)
	}
}

func TestRemoveRuntimeDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	l := newTestLauncher(t, root)
	dir := newRuntimeDir(t, root, "done")
	locked := filepath.Join(dir, "_work", "job", "readonly")
	if err := os.MkdirAll(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(locked, "f"), []byte("x"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(locked), 0o555); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveRuntimeDir(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still exists", dir)
	}
	if err := l.RemoveRuntimeDir(context.Background(), dir); err != nil {
		t.Fatalf("removing an absent directory: %v", err)
	}
}

// The directory of a live runner is never removed: that would break a possibly busy job.
func TestRemoveRuntimeDirRefusesLiveRunner(t *testing.T) {
	t.Parallel()
	r := startWaitingRunner(t, "live", nil)
	if err := r.l.RemoveRuntimeDir(context.Background(), r.dir); !errors.Is(err, ErrRunnerAlive) {
		t.Fatalf("RemoveRuntimeDir(live) = %v, want ErrRunnerAlive", err)
	}
	r.stop(t)
	if err := r.l.RemoveRuntimeDir(context.Background(), r.dir); err != nil {
		t.Fatal(err)
	}
}

// Runner jobs can leave directories without write permission; removal grants it first.
// (Tests usually run as root, which ignores the bits, so makeRemovable is checked directly.)
func TestMakeRemovableGrantsDirectoryPermissions(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	locked := filepath.Join(parent, "run", "a", "b")
	if err := os.MkdirAll(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{locked, filepath.Dir(locked)} {
		if err := os.Chmod(d, 0o500); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	makeRemovable(root, "run")
	for _, d := range []string{locked, filepath.Dir(locked)} {
		if info, err := os.Stat(d); err != nil || info.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, %v; want 0700", d, info.Mode().Perm(), err)
		}
	}
}

// A shim that recorded the exit is only ending; its directory can go while it does (the
// engine would otherwise hold the attempt's slot for another pass). Before the exit is
// recorded, a live shim protects its directory.
func TestRemoveRuntimeDirOfAnEndingShim(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	l := newTestLauncher(t, root)
	dir := newRuntimeDir(t, root, "ending")
	start, err := ProcessStartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// This test process stands in for the shim: alive, with a matching start time.
	if err := writeJSONAtomic(dir, ShimStateFile, ShimState{AttemptID: "ending", PID: os.Getpid(), StartTime: start}); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveRuntimeDir(context.Background(), dir); !errors.Is(err, ErrRunnerAlive) {
		t.Fatalf("RemoveRuntimeDir with a live shim and no exit status = %v, want ErrRunnerAlive", err)
	}
	if err := writeJSONAtomic(dir, ExitStatusFile, Exit{ExitCode: 0}); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveRuntimeDir(context.Background(), dir); err != nil {
		t.Fatalf("RemoveRuntimeDir once the exit is recorded = %v, want nil", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still exists", dir)
	}
}

// A launch that failed before any runner ever started on this host (say, a corrupt download)
// leaves no runtime root at all; concluding it must not fail on that.
func TestRemoveRuntimeDirWithoutRuntimeRoot(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "runners") // never created
	l := newTestLauncher(t, root)
	if err := l.RemoveRuntimeDir(context.Background(), filepath.Join(root, "attempt-1")); err != nil {
		t.Fatalf("RemoveRuntimeDir under a missing runtime root = %v, want nil (nothing to remove)", err)
	}
}

// TestRemoveWorkDir: an attempt's own work directory goes, whatever a job left in it (read-only
// directories, a symlink out of it, whose target stays); a missing one is nothing to remove; any
// path that is not <dir>/<plain name> is refused.
func TestRemoveWorkDir(t *testing.T) {
	parent := t.TempDir()
	outside := filepath.Join(t.TempDir(), "keep")
	if err := os.WriteFile(outside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "h1-0000000001")
	ro := filepath.Join(dir, "ws", "ro")
	if err := os.MkdirAll(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "f"), []byte("x"), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := RemoveWorkDir(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("work directory still there: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("a symlink's target was removed: %v", err)
	}
	if err := RemoveWorkDir(t.Context(), dir); err != nil {
		t.Errorf("removing it again: %v", err)
	}
	if err := RemoveWorkDir(t.Context(), filepath.Join(t.TempDir(), "gone", "h1-2")); err != nil {
		t.Errorf("a missing parent: %v", err)
	}
	for _, bad := range []string{"", "rel/h1-1", "/h1-1", "/", parent + "/", parent + "/../h1-1", parent + "/.."} {
		if err := RemoveWorkDir(t.Context(), bad); err == nil {
			t.Errorf("RemoveWorkDir(%q) accepted", bad)
		}
	}
	if _, err := os.Stat(parent); err != nil {
		t.Errorf("the parent went: %v", err)
	}
}
