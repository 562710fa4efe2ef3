package selfupdate

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

// countingRun is ExecRun that counts executions, to prove an unchanged stamp is not probed again.
type countingRun struct{ n atomic.Int32 }

func (c *countingRun) run(ctx context.Context, path string, args ...string) ([]byte, error) {
	c.n.Add(1)
	return ExecRun(ctx, path, args...)
}

func newTestWatcher(t *testing.T, source string) (*Watcher, *fakeClock, *countingRun) {
	clk, runs := newFakeClock(), &countingRun{}
	return &Watcher{
		Source: source, Running: "1.2.3", Clock: clk, Run: runs.run,
		Timeout: testProbeTimeout, Logger: slog.New(slog.DiscardHandler),
	}, clk, runs
}

// watching is a test watcher of a fresh source holding variant ("": no file there yet).
func watching(t *testing.T, variant string) (w *Watcher, clk *fakeClock, runs *countingRun, src string) {
	src = filepath.Join(t.TempDir(), "runner-manager")
	if variant != "" {
		placeBin(t, variant, src)
	}
	w, clk, runs = newTestWatcher(t, src)
	return w, clk, runs, src
}

// Each broken or same-version file is probed once and then ignored until its stamp changes.
func TestWatcherIgnoresWhatIsNotAnUpgrade(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"same version rewrite", func(t *testing.T, p string) { placeBin(t, "v1.2.3", p) }},
		{"exits non-zero", func(t *testing.T, p string) { placeBin(t, "fail", p) }},
		{"hangs", func(t *testing.T, p string) { placeBin(t, "hang", p) }},
		{"prints garbage", func(t *testing.T, p string) { placeBin(t, "garbage", p) }},
		{"partial write", func(t *testing.T, p string) {
			full, err := os.ReadFile(filepath.Join(fakeBins, "v1.2.4"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, full[:len(full)/2], 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"not executable yet", func(t *testing.T, p string) {
			placeBin(t, "v1.2.4", p)
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"rolled back earlier", func(t *testing.T, p string) { placeBin(t, "v1.2.5", p) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "runner-manager")
			tt.setup(t, src)
			w, _, runs := newTestWatcher(t, src)
			w.Rejected = "1.2.5"
			for i := range 3 {
				if c, ok := w.check(t.Context()); ok {
					t.Fatalf("check %d offered %+v", i, c)
				}
			}
			if n := runs.n.Load(); n != 1 {
				t.Fatalf("probed %d times, want once for an unchanged stamp", n)
			}
		})
	}
}

// A broken write followed by the finished file is an upgrade: the change of stamp re-arms the probe.
func TestWatcherPartialWriteThenCompleteIsAnUpgrade(t *testing.T) {
	src := filepath.Join(t.TempDir(), "runner-manager")
	full, err := os.ReadFile(filepath.Join(fakeBins, "v1.2.4"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, full[:len(full)/3], 0o755); err != nil {
		t.Fatal(err)
	}
	w, clk, runs := newTestWatcher(t, src)
	got := make(chan Candidate, 1)
	go func() {
		c, err := w.Next(t.Context())
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	clk.awaitWaiter(t) // first check: partial file rejected
	clk.Advance(DefaultInterval)
	clk.awaitWaiter(t) // unchanged: not probed again
	if n := runs.n.Load(); n != 1 {
		t.Fatalf("probed %d times before the write finished, want 1", n)
	}
	if err := os.WriteFile(src, full, 0o755); err != nil {
		t.Fatal(err)
	}
	clk.Advance(DefaultInterval)
	c := <-got
	if c.Version != "1.2.4" || c.Path != src {
		t.Fatalf("candidate = %+v, want 1.2.4 at %s", c, src)
	}
}

// A binary replaced before the daemon first looked is caught by the very first check, no tick needed.
func TestWatcherFirstCheckComparesWithCompiledInVersion(t *testing.T) {
	w, _, _, _ := watching(t, "v1.2.4")
	c, err := w.Next(t.Context())
	if err != nil || c.Version != "1.2.4" {
		t.Fatalf("Next = %+v, %v; want 1.2.4 at once", c, err)
	}
}

func TestWatcherMissingSourceThenBack(t *testing.T) {
	w, _, runs, src := watching(t, "")
	if _, ok := w.check(t.Context()); ok || runs.n.Load() != 0 {
		t.Fatal("a missing source was probed or offered")
	}
	placeBin(t, "v1.2.4", src)
	if c, ok := w.check(t.Context()); !ok || c.Version != "1.2.4" {
		t.Fatalf("reappeared source not offered: %+v %v", c, ok)
	}
}

func TestWatcherStopsOnCancel(t *testing.T) {
	w, clk, _, _ := watching(t, "v1.2.3")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := w.Next(ctx); done <- err }()
	clk.awaitWaiter(t)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Next = %v, want context.Canceled", err)
	}
}

// A file copied without its execute bit and chmod'ed afterwards keeps size and mtime: the mode in
// the stamp is what makes the watcher look again.
func TestWatcherChmodRearmsTheProbe(t *testing.T) {
	w, _, _, src := watching(t, "v1.2.4")
	if err := os.Chmod(src, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.check(t.Context()); ok {
		t.Fatal("a non-executable file was offered")
	}
	if err := os.Chmod(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if c, ok := w.check(t.Context()); !ok || c.Version != "1.2.4" {
		t.Fatalf("after chmod: %+v, %v; want 1.2.4", c, ok)
	}
}

// "text file busy" means the writer still has the file open: the stamp is not judged yet, so the
// close (which changes nothing a stat sees) does not leave a good binary ignored forever.
func TestWatcherRetriesATextFileBusy(t *testing.T) {
	w, _, _, _ := watching(t, "v1.2.4")
	busy := true
	w.Run = func(ctx context.Context, path string, args ...string) ([]byte, error) {
		if busy {
			return nil, &os.PathError{Op: "fork/exec", Path: path, Err: syscall.ETXTBSY}
		}
		return ExecRun(ctx, path, args...)
	}
	if _, ok := w.check(t.Context()); ok {
		t.Fatal("a busy file was offered")
	}
	busy = false
	if c, ok := w.check(t.Context()); !ok || c.Version != "1.2.4" {
		t.Fatalf("after the writer closed: %+v, %v; want 1.2.4", c, ok)
	}
}

// TestWatcherRefusesAnUnsafeSource: a source another user could have written (the file, a
// directory above it, or the target of a symlink) is never executed, not even for --version, and
// never offered; once fixed, the same file is offered at the next period. Needs root (CI is root)
// to give files to another user.
func TestWatcherRefusesAnUnsafeSource(t *testing.T) {
	livetest.Root(t, "giving files to another user (uid 65534)")
	const nobody = 65534
	tests := []struct {
		name        string
		unsafe, fix func(t *testing.T, dir, src string)
	}{
		{"group-writable file", func(t *testing.T, _, src string) { must(t, os.Chmod(src, 0o775)) },
			func(t *testing.T, _, src string) { must(t, os.Chmod(src, 0o755)) }},
		{"world-writable file", func(t *testing.T, _, src string) { must(t, os.Chmod(src, 0o757)) },
			func(t *testing.T, _, src string) { must(t, os.Chmod(src, 0o755)) }},
		{"file of another user", func(t *testing.T, _, src string) { must(t, os.Chown(src, nobody, nobody)) },
			func(t *testing.T, _, src string) { must(t, os.Chown(src, 0, 0)) }},
		{"world-writable directory above", func(t *testing.T, dir, _ string) { must(t, os.Chmod(dir, 0o777)) },
			func(t *testing.T, dir, _ string) { must(t, os.Chmod(dir, 0o755)) }},
		{"directory above of another user", func(t *testing.T, dir, _ string) { must(t, os.Chown(dir, nobody, nobody)) },
			func(t *testing.T, dir, _ string) { must(t, os.Chown(dir, 0, 0)) }},
		{"symlink to a file in an unsafe directory", func(t *testing.T, dir, src string) {
			real := filepath.Join(dir, "real")
			must(t, os.Mkdir(real, 0o777))
			must(t, os.Chmod(real, 0o777))
			must(t, os.Rename(src, filepath.Join(real, "runner-manager")))
			must(t, os.Symlink(filepath.Join(real, "runner-manager"), src))
		}, func(t *testing.T, dir, _ string) { must(t, os.Chmod(filepath.Join(dir, "real"), 0o755)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bin")
			must(t, os.Mkdir(dir, 0o755))
			src := filepath.Join(dir, "runner-manager")
			placeBin(t, "v1.2.4", src)
			tt.unsafe(t, dir, src)
			w, _, runs := newTestWatcher(t, src)
			for i := range 2 {
				if c, ok := w.check(t.Context()); ok {
					t.Fatalf("check %d offered an unsafe source: %+v", i, c)
				}
			}
			if n := runs.n.Load(); n != 0 {
				t.Fatalf("an unsafe source was executed %d times", n)
			}
			if err := CheckSource(src, 0); err == nil || !strings.Contains(err.Error(), "chown root and chmod go-w") {
				t.Fatalf("CheckSource = %v, want a refusal saying what to fix", err)
			}
			tt.fix(t, dir, src)
			if c, ok := w.check(t.Context()); !ok || c.Version != "1.2.4" {
				t.Fatalf("after the fix: %+v, %v; want 1.2.4 offered", c, ok)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
