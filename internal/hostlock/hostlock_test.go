package hostlock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/clocktest"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

// fakeTime is the injected clock: After advances it instantly and runs onWait first, so a test
// can change the world "during" the settle window without sleeping.
type fakeTime struct {
	*clocktest.Clock
	mu     sync.Mutex
	waits  int
	onWait func(n int)
}

// start is where every fakeTime starts.
var start = time.Unix(1000, 0)

func newFakeTime() *fakeTime { return &fakeTime{Clock: clocktest.New(start)} }

func (f *fakeTime) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	f.waits++
	n := f.waits
	f.mu.Unlock()
	f.Advance(d)
	if f.onWait != nil {
		f.onWait(n)
	}
	ch := make(chan time.Time, 1)
	ch <- f.Now()
	return ch
}

func (f *fakeTime) opts() Options { return Options{Now: f.Now, After: f.After} }

func lockPath(t *testing.T) string { return filepath.Join(t.TempDir(), FileName) }

// hold acquires the lock at path with the real clock.
func hold(t *testing.T, path string) *Lock {
	t.Helper()
	l, err := Acquire(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// mustBeFree fails unless the lock at path can be taken, and let go, at once; after says after what.
func mustBeFree(t *testing.T, path, after string) {
	t.Helper()
	l, err := Acquire(context.Background(), path, newFakeTime().opts())
	if err != nil {
		t.Fatalf("Acquire after %s: %v", after, err)
	}
	_ = l.Release()
}

func TestAcquireWritesPIDAndRelease(t *testing.T) {
	path := lockPath(t)
	l := hold(t, path)
	if got := readPID(path); got != os.Getpid() {
		t.Fatalf("pid in lock file = %d, want %d", got, os.Getpid())
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file mode %v, %v; want 0600", fi.Mode(), err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Fatalf("released lock still names pid %q", b)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	mustBeFree(t, path, "Release")
}

// A holder that lets go inside the settle window (a forked child reaching exec) is not a conflict.
func TestAcquireWithinSettleWindow(t *testing.T) {
	path := lockPath(t)
	holder := hold(t, path)
	ft := newFakeTime()
	ft.onWait = func(n int) {
		if n == 5 { // 125 ms in: well inside 250 ms
			_ = holder.Release()
		}
	}
	l, err := Acquire(context.Background(), path, ft.opts())
	if err != nil {
		t.Fatalf("Acquire with the holder releasing at 125 ms: %v", err)
	}
	defer l.Release()
	if ft.waits != 5 {
		t.Fatalf("acquired after %d waits, want 5 (right after the release)", ft.waits)
	}
}

func TestRefusalBelievedOnlyAfterSettleWindow(t *testing.T) {
	path := lockPath(t)
	holder := hold(t, path)
	defer holder.Release()
	ft := newFakeTime()
	_, err := Acquire(context.Background(), path, ft.opts())
	var held *HeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrHeld) || held.PID != os.Getpid() {
		t.Fatalf("Acquire of a held lock: %v, want *HeldError with our pid", err)
	}
	if elapsed := ft.Now().Sub(start); elapsed < DefaultSettle {
		t.Fatalf("refusal believed after %v, before the %v settle window", elapsed, DefaultSettle)
	}
	if want := 250 * time.Millisecond / DefaultRetry; ft.waits != int(want) {
		t.Fatalf("retried %d times, want %d", ft.waits, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Acquire(ctx, path, ft.opts()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with cancelled ctx: %v", err)
	}
}

func TestHeldErrorMessage(t *testing.T) {
	tests := []struct {
		err  HeldError
		want string
	}{
		{HeldError{"/var/lib/runner-manager/runner-manager.lock", 1234},
			"another runner-manager (pid 1234) holds /var/lib/runner-manager/runner-manager.lock: stop it first or use a different state_dir"},
		{HeldError{"/x.lock", 0}, "another runner-manager holds /x.lock: stop it first or use a different state_dir"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q\nwant      %q", got, tt.want)
		}
	}
}

func TestAcquireBadDir(t *testing.T) {
	_, err := Acquire(context.Background(), filepath.Join(t.TempDir(), "missing", FileName), Options{})
	if err == nil || errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "state_dir") {
		t.Fatalf("Acquire in a missing dir: %v", err)
	}
}

// The child processes below are this test binary re-executed with HOSTLOCK_TEST_CHILD set.
const childEnv = "HOSTLOCK_TEST_CHILD"

func TestChildProcess(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		return // not a child
	}
	if mode == "hold" {
		if _, err := Acquire(context.Background(), os.Getenv("HOSTLOCK_TEST_PATH"), Options{}); err != nil {
			fmt.Println("acquire failed:", err)
			os.Exit(2)
		}
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // live until the parent closes stdin or kills us
	os.Exit(0)
}

func startChild(t *testing.T, mode, path string) (*exec.Cmd, io.Closer) {
	t.Helper()
	cmd, stdin, stdout := livetest.Child(t, []string{childEnv + "=" + mode, "HOSTLOCK_TEST_PATH=" + path}, "-test.run=^TestChildProcess$")
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("child %s: %q %v", mode, sc.Text(), sc.Err())
	}
	return cmd, stdin
}

func TestHeldByAnotherProcessThenKilled(t *testing.T) {
	path := lockPath(t)
	cmd, _ := startChild(t, "hold", path)
	ft := newFakeTime()
	_, err := Acquire(context.Background(), path, ft.opts())
	want := fmt.Sprintf("another runner-manager (pid %d) holds %s: stop it first", cmd.Process.Pid, path)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Acquire while a child holds it: %v\nwant it to contain %q", err, want)
	}
	// kill -9: the kernel drops the flock with the process; no stale lock is left behind.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	mustBeFree(t, path, "the holder was killed")
}

// The lock descriptor is O_CLOEXEC: a child started while we hold the lock must not keep it.
func TestLockNotInheritedByChildren(t *testing.T) {
	path := lockPath(t)
	l := hold(t, path)
	startChild(t, "idle", path) // still running for the rest of the test
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	ft := newFakeTime()
	l2, err := Acquire(context.Background(), path, ft.opts())
	if err != nil || ft.waits != 0 {
		t.Fatalf("Acquire with a child of the old holder alive: %v after %d waits; the child inherited the lock", err, ft.waits)
	}
	_ = l2.Release()
}
