package logging

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Where the Windows service logs (it has no console and no journal): a file of at most
// RotateMaxBytes, and RotateKeep older ones beside it (runner-manager.log.1 newest), so the
// log takes at most 60 MiB however long the service runs.
const (
	RotateMaxBytes = 10 << 20
	RotateKeep     = 5
)

// RotatingFile appends to a log file and, before a write would take it past MaxBytes, renames it
// to path.1 (path.1 to path.2, and so on, dropping path.Keep) and starts a new one. The file is
// closed before it is renamed, which Windows requires; a rename that fails (a reader without
// FILE_SHARE_DELETE holds the file) is retried at the next write past the bound, and writing goes
// on meanwhile: a log is never dropped to honour the bound.
type RotatingFile struct {
	path     string
	maxBytes int64
	keep     int

	mu   sync.Mutex
	f    *os.File
	size int64
}

// OpenRotating opens (or creates, with its directory) the log file at path.
func OpenRotating(path string, maxBytes int64, keep int) (*RotatingFile, error) {
	r := &RotatingFile{path: path, maxBytes: maxBytes, keep: keep}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *RotatingFile) open() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("log file: %w", err)
	}
	r.f, r.size = f, fi.Size()
	return nil
}

// Write appends p, rotating first when p would take the file past the bound.
func (r *RotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, errors.New("log file: closed")
	}
	if r.size > 0 && r.size+int64(len(p)) > r.maxBytes {
		r.rotate()
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

// rotate shifts the files by one; on any failure the current file is reopened and kept.
func (r *RotatingFile) rotate() {
	if err := r.f.Close(); err != nil {
		_ = r.open()
		return
	}
	for i := r.keep - 1; i >= 1; i-- {
		if err := os.Rename(r.name(i), r.name(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	_ = os.Rename(r.path, r.name(1)) // kept growing when refused: see RotatingFile
	if err := r.open(); err != nil {
		r.f = nil
	}
}

func (r *RotatingFile) name(i int) string { return r.path + "." + strconv.Itoa(i) }

// Close closes the file.
func (r *RotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
