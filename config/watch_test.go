package config

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fakeClock hands Watch's debounce timers to the test, which fires them when it decides. Timer
// channels are unbuffered, so a successful fire means Watch has taken it; a timer stays current
// until Watch asks for a newer one.
type fakeClock struct {
	timers chan chan time.Time
	asked  atomic.Int64 // last debounce duration requested
}

func newFakeClock() *fakeClock { return &fakeClock{timers: make(chan chan time.Time, 1024)} }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.asked.Store(int64(d))
	ch := make(chan time.Time)
	c.timers <- ch
	return ch
}

// watching runs Watch on path until the test ends; each onChange sends the file's content.
func watching(t *testing.T, path string) (*fakeClock, <-chan string) {
	t.Helper()
	clock := newFakeClock()
	changes := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		done <- Watch(ctx, path, WatchOptions{Debounce: 123 * time.Millisecond, After: clock.After}, func() {
			b, _ := os.ReadFile(path)
			changes <- string(b)
		})
	}()
	<-started
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch returned %v", err)
		}
		goleak.VerifyNone(t)
	})
	// Watch has no ready signal; a marker file proves the directory watch is in place before the
	// test's real change: its event asks the clock for a timer only once watching has begun.
	marker := filepath.Join(filepath.Dir(path), "..marker")
	deadline := time.After(10 * time.Second)
	for i := 0; ; i++ {
		if err := os.WriteFile(marker, []byte{byte(i)}, 0o600); err != nil {
			t.Fatal(err)
		}
		select {
		case <-clock.timers:
		case <-time.After(20 * time.Millisecond): // re-touch: the watch may not be registered yet
			continue
		case <-deadline:
			t.Fatal("Watch never reacted to the directory")
		}
		break
	}
	drain(clock)
	return clock, changes
}

func drain(c *fakeClock) {
	for {
		select {
		case <-c.timers:
		default:
			return
		}
	}
}

// nextChange fires the current debounce timer whenever Watch has one and returns the first
// onChange content.
func nextChange(t *testing.T, clock *fakeClock, changes <-chan string, pending chan time.Time) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ch := <-clock.timers:
			pending = ch
		case pending <- time.Now():
			pending = nil
		case got := <-changes:
			return got
		case <-deadline:
			t.Fatal("no onChange seen")
		}
	}
}

// expectChange waits until onChange reports want (a non-atomic write may show a partial file first).
func expectChange(t *testing.T, clock *fakeClock, changes <-chan string, want string) {
	t.Helper()
	for nextChange(t, clock, changes, nil) != want {
	}
}

func writeAtomically(t *testing.T, tmp, dst, content string) {
	t.Helper()
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

func TestWatchWriteStyles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, dir, path, content string)
	}{
		{"in-place write", func(t *testing.T, _, path, content string) {
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"editor writes a temporary file and renames it over", func(t *testing.T, dir, path, content string) {
			writeAtomically(t, filepath.Join(dir, ".config.toml.swp"), path, content)
		}},
		{"atomic mv from another directory", func(t *testing.T, _, path, content string) {
			other := filepath.Join(filepath.Dir(filepath.Dir(path)), "staging.toml")
			writeAtomically(t, other, path, content)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "etc")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "config.toml")
			if err := os.WriteFile(path, []byte("v1"), 0o600); err != nil {
				t.Fatal(err)
			}
			clock, changes := watching(t, path)
			tc.write(t, dir, path, "v2")
			expectChange(t, clock, changes, "v2")
			tc.write(t, dir, path, "v3")
			expectChange(t, clock, changes, "v3")
		})
	}
}

// TestWatchConfigMapSwap builds a Kubernetes ConfigMap volume by hand and swaps ..data the way
// the kubelet does: new timestamped directory, new symlink, rename over ..data.
func TestWatchConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	mkVersion := func(name, content string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "config.toml"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mkVersion("..2026_12_02_10_00_00.1", "v1")
	must(t, os.Symlink("..2026_12_02_10_00_00.1", filepath.Join(dir, "..data")))
	path := filepath.Join(dir, "config.toml")
	must(t, os.Symlink("..data/config.toml", path))

	clock, changes := watching(t, path)
	for i, content := range []string{"v2", "v3"} {
		next := "..2026_12_02_10_00_0" + string(rune('1'+i)) + ".1"
		mkVersion(next, content)
		must(t, os.Symlink(next, filepath.Join(dir, "..data_tmp")))
		must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
		expectChange(t, clock, changes, content)
	}
}

// TestWatchDebounceAndNoopEvents: the file is read only when the debounce timer Watch asked for
// (with the configured duration) fires, and events that leave the bytes unchanged call nothing.
func TestWatchDebounceAndNoopEvents(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	must(t, os.WriteFile(path, []byte("v1"), 0o600))
	clock, changes := watching(t, path)

	writeAtomically(t, filepath.Join(dir, "tmp"), path, "v2")
	var pending chan time.Time
	select {
	case pending = <-clock.timers:
	case <-time.After(10 * time.Second):
		t.Fatal("the rename never reached Watch")
	}
	if got := time.Duration(clock.asked.Load()); got != 123*time.Millisecond {
		t.Errorf("debounce asked for %v, want 123ms", got)
	}
	select {
	case got := <-changes:
		t.Fatalf("onChange(%q) before the debounce timer fired", got)
	default:
	}
	if got := nextChange(t, clock, changes, pending); got != "v2" {
		t.Fatalf("first change %q, want v2", got)
	}

	must(t, os.Chmod(path, 0o640))                            // an event, same bytes
	writeAtomically(t, filepath.Join(dir, "tmp"), path, "v2") // replaced, same bytes
	writeAtomically(t, filepath.Join(dir, "tmp"), path, "v3")
	if got := nextChange(t, clock, changes, nil); got != "v3" {
		t.Fatalf("after events that changed nothing, got onChange(%q), want the v3 change first", got)
	}
}

func TestWatchMissingDirectory(t *testing.T) {
	err := Watch(context.Background(), filepath.Join(t.TempDir(), "no", "config.toml"), WatchOptions{}, func() {})
	if err == nil {
		t.Fatal("Watch on a missing directory returned nil")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
