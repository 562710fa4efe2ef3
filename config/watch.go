package config

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long Watch waits after the last file event before looking at the file:
// long enough to let an editor or a ConfigMap update finish its several renames.
const DefaultDebounce = 250 * time.Millisecond

// WatchOptions adjusts Watch; the zero value is what the daemon uses.
type WatchOptions struct {
	// Debounce is the quiet period after the last event before the file is read (DefaultDebounce if 0).
	Debounce time.Duration
	// After is the debounce clock, time.After if nil; tests pass a fake to fire it on demand.
	After func(time.Duration) <-chan time.Time
}

// Watch calls onChange each time the content of the file at path changes, until ctx ends; it then
// returns nil. onChange runs on Watch's goroutine, one call at a time; the consumer re-runs Load in
// it (and a rejected file is the consumer's business: Watch never parses).
//
// It watches the file's directory, not the file, so it survives every way a file gets replaced:
// writes in place, editors that write a temporary file and rename it over, an atomic `mv`, and
// Kubernetes ConfigMap volumes, where config.toml -> ..data/config.toml and ..data is a symlink
// swapped by rename. A symlink is re-resolved on every check, and the directory of its target is
// watched too. Events are debounced, and onChange fires only when the bytes behind path differ from
// the last ones seen (a file that disappears counts as a change, so Load can report it).
//
// Watch returns an error only if it cannot watch the directory at all, or the watcher fails.
func Watch(ctx context.Context, path string, opts WatchOptions, onChange func()) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("watch config %s: %w", path, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch config %s: %w", path, err)
	}
	defer w.Close()
	fw := &fileWatch{path: abs, w: w}
	if err := w.Add(filepath.Dir(abs)); err != nil {
		return fmt.Errorf("watch config directory %s: %w (does it exist?)", filepath.Dir(abs), err)
	}
	fw.follow()
	last := fingerprint(abs)

	debounce, after := opts.Debounce, opts.After
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	if after == nil {
		after = time.After
	}
	var fire <-chan time.Time // nil while no check is pending
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("watch config: fsnotify closed its event channel")
			}
			if fw.relevant(ev) {
				fire = after(debounce) // a newer event restarts the quiet period
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("watch config: fsnotify closed its error channel")
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				return fmt.Errorf("watch config %s: %w", abs, err)
			}
			fire = after(debounce) // events were lost: look at the file anyway
		case <-fire:
			fire = nil
			fw.follow()
			if fp := fingerprint(abs); !bytes.Equal(fp, last) {
				last = fp
				onChange()
			}
		}
	}
}

// fileWatch tracks the file and, when it is a symlink, the directory its target lives in.
type fileWatch struct {
	path      string
	w         *fsnotify.Watcher
	targetDir string // directory of the resolved target, when outside the file's directory
	target    string // resolved path
}

// follow re-resolves the symlink chain and moves the extra directory watch along with it.
func (f *fileWatch) follow() {
	resolved, err := filepath.EvalSymlinks(f.path)
	if err != nil {
		return // missing for now; the directory watch will see it come back
	}
	f.target = resolved
	dir := filepath.Dir(resolved)
	if dir == f.targetDir {
		return
	}
	if f.targetDir != "" {
		_ = f.w.Remove(f.targetDir) // may already be gone with its directory
	}
	f.targetDir = ""
	if dir != filepath.Dir(f.path) && f.w.Add(dir) == nil {
		f.targetDir = dir
	}
}

// relevant keeps events that can change what path reads: the file itself, Kubernetes' ..data
// links and ..timestamp directories, and the resolved target.
func (f *fileWatch) relevant(ev fsnotify.Event) bool {
	name := filepath.Clean(ev.Name)
	base := filepath.Base(name)
	return name == f.path || name == f.target || strings.HasPrefix(base, "..") ||
		(f.targetDir != "" && filepath.Dir(name) == f.targetDir)
}

// fingerprint identifies the bytes behind path (through symlinks), or their absence.
func fingerprint(path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return []byte("unreadable: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return sum[:]
}
