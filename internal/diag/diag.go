// Package diag keeps the diagnostics of a runner attempt that failed or was stopped: the shim's
// log and the runner's own _diag logs, copied into the daemon's 0700 state directory before the
// attempt's runtime directory is removed, so `runner-manager logs ATTEMPT-ID` can show why it
// ended. The runner's directory is written by a job, so it is read as hostile input: regular files
// only, opened relative to checked directory descriptors without following links (copy.go). Every
// byte kept passes through the daemon's Redactor; each file, each attempt and the whole store are
// size-capped, oldest attempts dropped first (prune.go). It never decides which attempts to keep.
package diag

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"
)

// DirName is the store's directory inside the state directory.
const DirName = "diagnostics"

// The caps (docs/security.md states them). A file larger than FileCap keeps its last FileCap
// bytes, where a failure is logged; an attempt keeps at most AttemptCap bytes and MaxFiles files;
// the store keeps at most MaxAttempts attempts and TotalCap bytes, dropping the oldest first.
const (
	FileCap     = 1 << 20
	AttemptCap  = 4 << 20
	MaxFiles    = 32
	MaxAttempts = 50
	TotalCap    = 64 << 20
)

// metaFile describes one kept attempt, beside its files.
const metaFile = "meta.json"

// Attempt is what the daemon knows of the attempt whose diagnostics it keeps.
type Attempt struct {
	ID       string    `json:"attempt"`
	Target   string    `json:"target"`
	Runner   string    `json:"runner"`
	State    string    `json:"state,omitempty"`  // the journal state it ended in
	Reason   string    `json:"reason,omitempty"` // why it failed or was stopped, when the journal says
	ExitCode *int      `json:"exit_code,omitempty"`
	KeptAt   time.Time `json:"kept_at"`
	Files    []File    `json:"files"`
	Skipped  []string  `json:"skipped,omitempty"` // entries not kept, with why (a link, not a regular file, over a cap)
}

// File is one kept file.
type File struct {
	Name    string `json:"name"` // "shim/runner.log" or "runner/<name in _diag>"
	Size    int64  `json:"size"` // bytes kept
	Dropped int64  `json:"dropped,omitempty"`
}

// Root is the store in stateDir.
func Root(stateDir string) string { return filepath.Join(stateDir, DirName) }

var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// checkID refuses an attempt id that is not a plain name (a path, "..").
func checkID(id string) error {
	if !validID.MatchString(id) || id == "." || id == ".." {
		return fmt.Errorf("%q is not an attempt id (see `runner-manager runners --failed`)", id)
	}
	return nil
}

// ErrNotKept says there are no kept diagnostics for an attempt.
var ErrNotKept = errors.New("no diagnostics kept for this attempt")

// List returns the kept attempts, newest first. A store that does not exist is empty.
func List(root string) ([]Attempt, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the kept diagnostics: %w", err)
	}
	var out []Attempt
	for _, e := range entries {
		if !e.IsDir() || checkID(e.Name()) != nil {
			continue // a temp directory of a keep under way, or not ours
		}
		a, err := readMeta(filepath.Join(root, e.Name()))
		if err != nil {
			continue
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].KeptAt.After(out[j].KeptAt) })
	return out, nil
}

// Read returns a kept attempt and its files' contents, in Files order.
func Read(root, id string) (Attempt, [][]byte, error) {
	if err := checkID(id); err != nil {
		return Attempt{}, nil, err
	}
	dir := filepath.Join(root, id)
	a, err := readMeta(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return Attempt{}, nil, fmt.Errorf("attempt %s: %w (only failed or stopped attempts are kept, and the oldest are dropped; see `runner-manager runners --failed`)", id, ErrNotKept)
	}
	if err != nil {
		return Attempt{}, nil, err
	}
	data := make([][]byte, len(a.Files))
	for i, f := range a.Files {
		if data[i], err = os.ReadFile(filepath.Join(dir, storedName(i))); err != nil {
			return a, nil, fmt.Errorf("read kept file %s of attempt %s: %w", f.Name, id, err)
		}
	}
	return a, data, nil
}

// storedName is the i-th file's name on disk: its own name came from a job and is only shown.
func storedName(i int) string { return fmt.Sprintf("%02d.log", i) }

func readMeta(dir string) (Attempt, error) {
	var a Attempt
	data, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return a, fmt.Errorf("kept diagnostics %s: %w", dir, err)
	}
	return a, nil
}
