package config

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultStatInterval is how often a Watcher re-checks the file and its directories without an
// event: the safety net for what inotify misses (network and overlay filesystems, a watch lost to
// a directory replaced in a way no event names).
const DefaultStatInterval = 10 * time.Second

// WatchOptions adjusts a Watcher; the zero value is what the daemon uses but for Settle.
type WatchOptions struct {
	// Settle returns the quiet period (daemon.reload_settle) at the moment it is needed, so a
	// reload that changes it takes effect at the next change. nil means 1 s.
	Settle func() time.Duration
	// StatInterval is the safety-net period (DefaultStatInterval if 0).
	StatInterval time.Duration
	// After is the clock of both, time.After if nil; tests pass a fake to fire timers on demand.
	After func(time.Duration) <-chan time.Time
	// OnHealth is called when the watch is lost (err says why) and when it is whole again (nil).
	OnHealth func(err error)
}

// Watcher watches one config file for complete changes. NewWatcher arms it; Run delivers changes.
//
// It survives every way a file or its directories get replaced: writes in place, editors that
// write a temporary file and rename it over (or rename the old one away first, as vim does),
// `mv` of a new file, Kubernetes ConfigMap volumes (config.toml -> ..data/config.toml, ..data a
// symlink swapped by rename), the directory renamed away and replaced, or removed and recreated.
// It watches the file's directory and that directory's parent, re-arms on the nearest existing
// ancestor while the directory is missing, follows a symlinked file into its target's directory,
// and re-checks all of it every StatInterval (re-adding any watch whose directory is a new inode).
type Watcher struct {
	path    string
	opts    WatchOptions
	w       *fsnotify.Watcher
	watched map[string]os.FileInfo // directory -> what it was when added (os.SameFile: inode, or Windows' file ID)
	target  string                 // the file's resolved path, when it is a symlink
	add     func(string) error     // fsnotify's Add; tests make it fail
	s       settler

	mu   sync.Mutex
	lost error // why the watch is not whole, nil when it is
}

// NewWatcher arms a watch on path and remembers what the file holds now, so a change made between
// this call and the caller's first load is seen. It fails only when no watch can be made at all.
func NewWatcher(path string, opts WatchOptions) (*Watcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("watch config %s: %w", path, err)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch config %s: %w (raise fs.inotify.max_user_instances, or reload with SIGHUP)", path, err)
	}
	if opts.Settle == nil {
		opts.Settle = func() time.Duration { return time.Second }
	}
	if opts.StatInterval <= 0 {
		opts.StatInterval = DefaultStatInterval
	}
	if opts.After == nil {
		opts.After = time.After
	}
	w := &Watcher{path: abs, opts: opts, w: fw, watched: map[string]os.FileInfo{}, add: fw.Add}
	w.lost = w.arm() // reported by Run, once the caller can log it
	w.s.last = fingerprint(abs)
	return w, nil
}

// Close releases the watch; Run does it when it returns, Close is for a Watcher never run.
func (w *Watcher) Close() error { return w.w.Close() }

// Healthy reports whether every watch the file needs is in place (nil) or why not.
func (w *Watcher) Healthy() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost
}

// Run calls onChange with the file's complete new content (or the error reading it, such as a
// removed file) each time it has settled on something other than what was last handed over, until
// ctx ends. onChange runs on Run's goroutine, one call at a time. Run closes the watcher.
func (w *Watcher) Run(ctx context.Context, onChange func(data []byte, err error)) {
	defer w.w.Close()
	if err := w.Healthy(); err != nil && w.opts.OnHealth != nil {
		w.opts.OnHealth(err)
	}
	events, errs := w.w.Events, w.w.Errors
	var settle <-chan time.Time // nil while no quiet period runs
	stat := w.opts.After(w.opts.StatInterval)
	changed := func() {
		w.s.event()
		settle = w.opts.After(w.opts.Settle()) // a newer event restarts the quiet period
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				w.setLost(errors.New("fsnotify closed its event channel"))
				events = nil // the stat check goes on alone
				continue
			}
			if w.relevant(ev) {
				w.setLost(w.arm())
				changed()
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				w.setLost(err) // the stat check re-arms
			}
			changed() // events may have been lost: look at the file anyway
		case <-stat:
			stat = w.opts.After(w.opts.StatInterval)
			w.setLost(w.arm())
			if settle == nil && !sameSum(fingerprint(w.path), w.s.last) {
				changed()
			}
		case <-settle:
			settle = nil
			data, err := os.ReadFile(w.path)
			apply, again := w.s.check(sumOf(data, err))
			if apply {
				onChange(data, err)
			}
			if again {
				settle = w.opts.After(w.opts.Settle())
			}
		}
	}
}

// wanted is the set of directories the file needs watched now: its directory and that
// directory's parent (to see the directory itself replaced), or the nearest existing ancestor
// while the directory is missing, plus the directory of a symlinked file's target.
func (w *Watcher) wanted() []string {
	dir := filepath.Dir(w.path)
	anchor := dir
	for !isDir(anchor) && filepath.Dir(anchor) != anchor {
		anchor = filepath.Dir(anchor)
	}
	want := []string{anchor}
	if anchor == dir && filepath.Dir(dir) != dir {
		want = append(want, filepath.Dir(dir))
	}
	w.target = ""
	if resolved, err := filepath.EvalSymlinks(w.path); err == nil && resolved != w.path {
		w.target = resolved
		if td := filepath.Dir(resolved); td != dir {
			want = append(want, td)
		}
	}
	return want
}

// arm makes the watches match wanted, re-adding one whose path now names another directory, and
// returns what could not be watched.
func (w *Watcher) arm() error {
	want := w.wanted()
	keep := map[string]bool{}
	live := map[string]bool{} // what inotify still has: it drops a watch whose directory moved or went
	for _, d := range w.w.WatchList() {
		live[d] = true
	}
	var failed error
	for _, d := range want {
		keep[d] = true
		now, err := os.Stat(d)
		if old, watched := w.watched[d]; watched && live[d] && err == nil && os.SameFile(old, now) {
			continue
		}
		_ = w.w.Remove(d) // a stale watch on a replaced directory, or none
		delete(w.watched, d)
		if err := w.add(d); err != nil {
			failed = errors.Join(failed, fmt.Errorf("watch %s: %w", d, err))
			continue
		}
		w.watched[d] = now // nil when the stat failed: never the same, so the next arm re-adds it
	}
	for d := range w.watched {
		if !keep[d] {
			_ = w.w.Remove(d)
			delete(w.watched, d)
		}
	}
	return failed
}

// setLost records the watch's health and reports a change of it (not every failed re-arm).
func (w *Watcher) setLost(err error) {
	w.mu.Lock()
	changed := (err == nil) != (w.lost == nil)
	w.lost = err
	w.mu.Unlock()
	if changed && w.opts.OnHealth != nil {
		w.opts.OnHealth(err)
	}
}

// relevant keeps events that can change what path reads: the file, any directory on its path
// (replaced, removed, recreated), Kubernetes' ..data links and ..timestamp directories, and the
// symlinked file's target directory.
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	name := filepath.Clean(ev.Name)
	if name == w.path || name == w.target || strings.HasPrefix(w.path, name+string(filepath.Separator)) {
		return true
	}
	if dir := filepath.Dir(name); dir == filepath.Dir(w.path) && strings.HasPrefix(filepath.Base(name), "..") {
		return true
	}
	return w.target != "" && filepath.Dir(name) == filepath.Dir(w.target)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// fingerprint identifies the bytes behind path (through symlinks), or their absence.
func fingerprint(path string) []byte {
	data, err := os.ReadFile(path)
	return sumOf(data, err)
}

func sumOf(data []byte, err error) []byte {
	if err != nil {
		return []byte("unreadable: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return sum[:]
}

func sameSum(a, b []byte) bool { return string(a) == string(b) }
