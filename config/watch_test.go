package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

const (
	testSettle = 123 * time.Millisecond
	testStat   = 10 * time.Second
)

// TestSettler: content is handed over only when two reads a quiet period apart agree, and never
// when it is back to what was handed over last.
func TestSettler(t *testing.T) {
	a, b, c := []byte("a"), []byte("b"), []byte("c")
	type step struct {
		event       bool   // a watch event arrives (before the check, if any)
		read        []byte // the file's sum at the end of a quiet period; nil = no check
		apply, more bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"one complete write", []step{{event: true, read: b, more: true}, {read: b, apply: true}}},
		{"no change after all", []step{{event: true, read: a}}},
		{"still changing between the reads", []step{{event: true, read: b, more: true}, {read: c, more: true}, {read: c, apply: true}}},
		{"half written, paused, then the rest: the half is never applied", []step{
			{event: true, read: b, more: true}, {event: true, read: c, more: true}, {read: c, apply: true}}},
		{"an event between the reads discards the first", []step{{event: true, read: b, more: true}, {event: true, read: b, more: true}, {read: b, apply: true}}},
		{"changed and changed back", []step{{event: true, read: b, more: true}, {read: a}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := settler{last: a}
			for i, st := range tc.steps {
				if st.event {
					s.event()
				}
				apply, more := s.check(st.read)
				if apply != st.apply || more != st.more {
					t.Fatalf("step %d: check(%s) = apply %v, again %v; want %v, %v", i, st.read, apply, more, st.apply, st.more)
				}
			}
		})
	}
}

// fakeClock hands the Watcher's timers to the test, which fires them when it decides. Timer
// channels are unbuffered, so a successful fire means the Watcher has taken it.
type fakeClock struct{ timers chan fakeTimer }

type fakeTimer struct {
	d  time.Duration
	ch chan time.Time
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time)
	c.timers <- fakeTimer{d, ch}
	return ch
}

type watched struct {
	t       *testing.T
	w       *Watcher
	clock   *fakeClock
	changes chan string
	settle  chan time.Time // the current quiet-period timer, nil if none
	stat    chan time.Time // the current stat timer
	mu      sync.Mutex
	health  []error
}

// watch arms a Watcher on path and runs it until the test ends; each change sends the content.
func watch(t *testing.T, path string, beforeRun func(*watched)) *watched {
	t.Helper()
	x := &watched{t: t, clock: &fakeClock{timers: make(chan fakeTimer, 1024)}, changes: make(chan string, 16)}
	w, err := NewWatcher(path, WatchOptions{Settle: func() time.Duration { return testSettle }, StatInterval: testStat,
		After: x.clock.After, OnHealth: func(err error) { x.mu.Lock(); x.health = append(x.health, err); x.mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	x.w = w
	if beforeRun != nil {
		beforeRun(x)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, func(data []byte, err error) {
			if err != nil {
				x.changes <- "error: " + err.Error()
				return
			}
			x.changes <- string(data)
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		goleak.VerifyNone(t)
	})
	x.take(time.Second) // the first stat timer
	return x
}

// keep holds a timer the Watcher asked for: the stat check's or the quiet period's.
func (x *watched) keep(tm fakeTimer) {
	if tm.d == testStat {
		x.stat = tm.ch
	} else {
		x.settle = tm.ch
	}
}

// take receives timers the Watcher asked for until it gets none within wait.
func (x *watched) take(wait time.Duration) {
	for {
		select {
		case tm := <-x.clock.timers:
			x.keep(tm)
		case <-time.After(wait):
			return
		}
	}
}

// next fires quiet-period timers whenever the Watcher has one and returns the next change.
func (x *watched) next() string {
	x.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		var fire chan time.Time
		if x.settle != nil {
			fire = x.settle
		}
		select {
		case tm := <-x.clock.timers:
			x.keep(tm)
		case fire <- time.Now():
			x.settle = nil
		case got := <-x.changes:
			return got
		case <-deadline:
			x.t.Fatal("no change seen")
		}
	}
}

// expect waits for the change want and fails on any other change before it.
func (x *watched) expect(want string) {
	x.t.Helper()
	if got := x.next(); got != want {
		x.t.Fatalf("change %q, want %q", got, want)
	}
}

// quiet fires the stat timer and any quiet-period timer and fails if a change follows.
func (x *watched) quiet() {
	x.t.Helper()
	x.take(50 * time.Millisecond)
	x.stat <- time.Now()
	x.stat = nil
	for i := 0; i < 3; i++ {
		x.take(50 * time.Millisecond)
		if x.settle != nil {
			x.settle <- time.Now()
			x.settle = nil
		}
	}
	select {
	case got := <-x.changes:
		x.t.Fatalf("unexpected change %q", got)
	case <-time.After(50 * time.Millisecond):
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	must(t, os.WriteFile(path, []byte(content), 0o600))
}

func writeAtomically(t *testing.T, tmp, dst, content string) {
	t.Helper()
	write(t, tmp, content)
	must(t, os.Rename(tmp, dst))
}

// TestWatchWritePatterns: every way a file or its directory gets replaced is seen, each write is
// handed over exactly once, and the watch keeps working for the next write.
func TestWatchWritePatterns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, root, dir, path, content string)
	}{
		{"in-place write", func(t *testing.T, _, _, path, content string) { write(t, path, content) }},
		{"temporary file renamed over", func(t *testing.T, _, dir, path, content string) {
			writeAtomically(t, filepath.Join(dir, ".config.toml.swp"), path, content)
		}},
		{"mv from another directory", func(t *testing.T, root, _, path, content string) {
			writeAtomically(t, filepath.Join(root, "staging.toml"), path, content)
		}},
		{"vim: rename away, then write", func(t *testing.T, _, _, path, content string) {
			must(t, os.Rename(path, path+"~"))
			write(t, path, content)
			must(t, os.Remove(path+"~"))
		}},
		{"directory replaced by two renames", func(t *testing.T, root, dir, _, content string) {
			next := filepath.Join(root, "etc.new")
			must(t, os.Mkdir(next, 0o700))
			write(t, filepath.Join(next, "config.toml"), content)
			_ = os.RemoveAll(filepath.Join(root, "etc.old"))
			must(t, os.Rename(dir, filepath.Join(root, "etc.old")))
			must(t, os.Rename(next, dir))
		}},
		{"directory removed and recreated", func(t *testing.T, _, dir, path, content string) {
			must(t, os.RemoveAll(dir))
			must(t, os.Mkdir(dir, 0o700))
			write(t, path, content)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "etc")
			must(t, os.Mkdir(dir, 0o700))
			path := filepath.Join(dir, "config.toml")
			write(t, path, "v1")
			x := watch(t, path, nil)
			for _, v := range []string{"v2", "v3"} {
				tc.write(t, root, dir, path, v)
				x.expect(v)
				x.quiet()
			}
			if err := x.w.Healthy(); err != nil {
				t.Fatalf("watch not healthy after the writes: %v", err)
			}
		})
	}
}

// TestWatchConfigMapSwap builds a Kubernetes ConfigMap volume by hand and swaps ..data the way
// the kubelet does: new timestamped directory, new symlink, rename over ..data.
func TestWatchConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	mkVersion := func(name, content string) {
		must(t, os.Mkdir(filepath.Join(dir, name), 0o755))
		write(t, filepath.Join(dir, name, "config.toml"), content)
	}
	mkVersion("..2026_12_02_10_00_00.1", "v1")
	must(t, os.Symlink("..2026_12_02_10_00_00.1", filepath.Join(dir, "..data")))
	path := filepath.Join(dir, "config.toml")
	must(t, os.Symlink("..data/config.toml", path))
	x := watch(t, path, nil)
	for i, content := range []string{"v2", "v3"} {
		next := "..2026_12_02_10_00_0" + string(rune('1'+i)) + ".1"
		mkVersion(next, content)
		must(t, os.Symlink(next, filepath.Join(dir, "..data_tmp")))
		must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
		x.expect(content)
	}
}

// TestWatchHalfWrittenFile: truncate, write half, a pause of one quiet period, then the rest: the
// half is never handed over, the final content exactly once.
func TestWatchHalfWrittenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	write(t, path, "v1")
	x := watch(t, path, nil)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	must(t, err)
	_, err = f.WriteString("[daemon]\nmax_")
	must(t, err)
	x.take(200 * time.Millisecond)
	x.settle <- time.Now() // the pause outlasts a quiet period: the half is read once
	x.settle = nil
	x.take(200 * time.Millisecond)
	if x.settle == nil {
		t.Fatal("after the first read the Watcher did not wait for a second one")
	}
	_, err = f.WriteString("runners = 2\n")
	must(t, err)
	must(t, f.Close())
	x.expect("[daemon]\nmax_runners = 2\n")
	x.quiet()
}

// TestWatchArmedBeforeTheFirstLoad: a change made after NewWatcher, before Run (the daemon's
// first load happens in between), is handed over.
func TestWatchArmedBeforeTheFirstLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	write(t, path, "v1")
	x := watch(t, path, func(*watched) { write(t, path, "v2") })
	x.expect("v2")
}

// TestWatchStatSafetyNet: a change no event reports (a watch inotify dropped, a network
// filesystem) is found by the stat check, which also re-arms the watch.
func TestWatchStatSafetyNet(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	write(t, path, "v1")
	x := watch(t, path, nil)
	must(t, x.w.w.Remove(dir)) // as inotify does when it loses a watch
	write(t, path, "v2")
	x.take(200 * time.Millisecond)
	if x.settle != nil {
		t.Fatal("an event arrived through a removed watch; the test proves nothing")
	}
	x.stat <- time.Now()
	x.stat = nil
	x.expect("v2")
	write(t, path, "v3") // the stat check re-armed the directory watch: events flow again
	x.take(200 * time.Millisecond)
	if x.settle == nil {
		t.Fatal("no event after the stat check: the watch was not re-armed")
	}
	x.expect("v3")
}

// TestWatchRemovedFile: a file that stays gone is handed over as an error (the daemon reports it
// and keeps the last good config); its return is a change again.
func TestWatchRemovedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	write(t, path, "v1")
	x := watch(t, path, nil)
	must(t, os.Remove(path))
	if got := x.next(); !strings.HasPrefix(got, "error: ") {
		t.Fatalf("change %q, want the read error", got)
	}
	write(t, path, "v1")
	x.expect("v1")
}

// TestWatchLostIsReportedOnce: a watch that cannot be re-armed is reported once, not per check.
func TestWatchLostIsReportedOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	write(t, path, "v1")
	x := watch(t, path, func(x *watched) {
		must(t, x.w.w.Remove(dir))
		x.w.add = func(string) error { return errors.New("no space left on device") } // inotify's watch limit
	})
	for i := 0; i < 3; i++ {
		x.take(100 * time.Millisecond)
		x.stat <- time.Now()
		x.stat = nil
	}
	x.take(100 * time.Millisecond)
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.health) != 1 || x.health[0] == nil {
		t.Fatalf("health reports %v, want exactly one loss", x.health)
	}
	if x.w.Healthy() == nil {
		t.Fatal("Healthy() = nil with a closed watcher")
	}
}

func TestWatchMissingDirectoryArmsOnAnAncestor(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "etc", "rm", "config.toml")
	x := watch(t, path, nil)
	if err := x.w.Healthy(); err != nil {
		t.Fatalf("watch on the nearest existing ancestor not healthy: %v", err)
	}
	must(t, os.MkdirAll(filepath.Dir(path), 0o700))
	x.take(200 * time.Millisecond) // the ancestor's event re-arms one level down
	x.stat <- time.Now()           // and the stat check the rest
	x.stat = nil
	write(t, path, "v1")
	x.expect("v1")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
