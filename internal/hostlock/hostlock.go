// Package hostlock owns runner-manager's single-instance lock: an flock(2) on
// <state_dir>/runner-manager.lock holding the holder's pid, so two daemons never manage the same
// host's runners. It never removes the lock file (a removed file would let two processes each lock
// a different inode) and never kills or signals the holder.
//
// Why a settle window: flock locks belong to the open file description, and every fork copies the
// descriptor table. Go opens the lock with O_CLOEXEC, so the copy vanishes at exec, but between a
// fork and its exec (the daemon starting a shim, or an upgrade handing over) the child briefly
// holds the same lock. A refusal seen in that window is not another daemon; only a refusal that
// persists for the whole window (250 ms by default) is believed. TestAcquireWithinSettleWindow pins it.
package hostlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

// FileName is the lock's name inside the state directory.
const FileName = "runner-manager.lock"

// Defaults for Options.
const (
	DefaultSettle = 250 * time.Millisecond
	DefaultRetry  = 25 * time.Millisecond
)

// ErrHeld: another process holds the lock for the whole settle window.
var ErrHeld = errors.New("single-instance lock is held")

// HeldError is the refusal Acquire returns; errors.Is(err, ErrHeld) matches it.
type HeldError struct {
	Path string
	PID  int // holder's pid as it wrote it into the file; 0 if unreadable
}

func (e *HeldError) Error() string {
	holder := "another runner-manager"
	if e.PID > 0 {
		holder = fmt.Sprintf("another runner-manager (pid %d)", e.PID)
	}
	return fmt.Sprintf("%s holds %s: stop it first or use a different state_dir", holder, e.Path)
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// Options tunes Acquire. The zero value uses the defaults and the real clock.
type Options struct {
	Settle time.Duration                        // how long a refusal must persist; DefaultSettle when 0
	Retry  time.Duration                        // pause between tries; DefaultRetry when 0
	Now    func() time.Time                     // time.Now when nil
	After  func(time.Duration) <-chan time.Time // time.After when nil
}

// Lock is a held single-instance lock.
type Lock struct {
	path string
	fl   *flock.Flock
}

// Acquire takes the exclusive lock at path (creating the file 0600) and writes this process's pid
// into it. A refusal is retried until it has persisted for the settle window; then a *HeldError
// naming the holder's pid is returned. ctx bounds the wait.
func Acquire(ctx context.Context, path string, opts Options) (*Lock, error) {
	settle, retry := opts.Settle, opts.Retry
	if settle <= 0 {
		settle = DefaultSettle
	}
	if retry <= 0 {
		retry = DefaultRetry
	}
	now, after := opts.Now, opts.After
	if now == nil {
		now = time.Now
	}
	if after == nil {
		after = time.After
	}

	fl := flock.New(path, flock.SetPermissions(0o600))
	deadline := now().Add(settle)
	for {
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fmt.Errorf("take single-instance lock %s: %w (check the state_dir exists and is writable)", path, err)
		}
		if ok {
			l := &Lock{path: path, fl: fl}
			if err := writePID(path); err != nil {
				_ = fl.Unlock()
				return nil, err
			}
			return l, nil
		}
		if !now().Before(deadline) {
			return nil, &HeldError{Path: path, PID: readPID(path)}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for single-instance lock %s: %w", path, ctx.Err())
		case <-after(retry):
		}
	}
}

// Release clears the pid and releases the lock. The file stays (see the package comment).
func (l *Lock) Release() error {
	if !l.fl.Locked() {
		return nil
	}
	// Truncate while still holding the lock, so a stale pid is never shown for a free lock.
	terr := os.Truncate(l.path, 0)
	if err := l.fl.Unlock(); err != nil {
		return fmt.Errorf("release single-instance lock %s: %w", l.path, err)
	}
	if terr != nil {
		return fmt.Errorf("clear pid in %s: %w", l.path, terr)
	}
	return nil
}

// writePID records the holder through a second descriptor: unlike POSIX record locks, an flock is
// not dropped when another descriptor of the same file is closed.
func writePID(path string) error {
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return fmt.Errorf("write pid into %s: %w", path, err)
	}
	return nil
}

func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
