//go:build linux

package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrepareIsIdempotentUntilStarted(t *testing.T) {
	t.Parallel()
	srv, p := servedPackage(t)
	c := newTestCache(t, CacheOptions{})
	root := t.TempDir()
	l := newTestLauncher(t, root)
	dir := filepath.Join(root, "a1")

	if err := l.Prepare(context.Background(), c, p, dir); err != nil {
		t.Fatal(err)
	}
	// An interrupted earlier Prepare left junk: a second Prepare replaces it.
	if err := os.WriteFile(filepath.Join(RunnerRoot(dir), "_work", "junk"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Prepare(context.Background(), c, p, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(RunnerRoot(dir), "_work", "junk")); !os.IsNotExist(err) {
		t.Fatal("Prepare kept the previous directory's content")
	}
	if _, err := os.Stat(filepath.Join(RunnerRoot(dir), "run.sh")); err != nil {
		t.Fatal(err)
	}
	if srv.hits.Load() != 1 {
		t.Fatalf("%d downloads, want 1", srv.hits.Load())
	}
	// Once a shim has used it, the directory is never reused.
	if err := writeJSONAtomic(dir, ShimStateFile, ShimState{PID: 1, StartTime: 1}); err != nil {
		t.Fatal(err)
	}
	if err := l.Prepare(context.Background(), c, p, dir); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("Prepare over a used directory = %v", err)
	}
	if err := l.Prepare(context.Background(), c, p, filepath.Join(t.TempDir(), "x")); err == nil ||
		!strings.Contains(err.Error(), "outside the runtime root") {
		t.Fatalf("Prepare outside the root = %v", err)
	}
}

// The whole path the engine takes: cache, prepare, start, stop, exit, remove.
func TestPackageToRunnerEndToEnd(t *testing.T) {
	t.Parallel()
	entries := append([]tarEntry{{name: "./run.sh", body: fakeRunner, mode: 0o755}}, runnerPackage[3:]...)
	body := buildTarGz(t, entries)
	srv := servePackage(t, serveBytes(body))
	c := newTestCache(t, CacheOptions{})
	root := t.TempDir()
	l := newTestLauncher(t, root)
	dir := filepath.Join(root, "e2e")
	if err := l.Prepare(context.Background(), c, testPackage(srv.URL, body), dir); err != nil {
		t.Fatal(err)
	}
	r := running{l: l, dir: dir, h: startTestRunner(t, l, dir, nil)}
	waitLog(t, dir, "runner: ready", 1)
	if exit := r.stop(t); exit.ExitCode != 42 || !exit.StopRequested {
		t.Fatalf("exit = %+v", exit)
	}
	if err := l.RemoveRuntimeDir(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), testPackage(srv.URL, body).Key(), "run.sh")); err != nil {
		t.Fatalf("removing the runtime directory harmed the cache: %v", err)
	}
}
