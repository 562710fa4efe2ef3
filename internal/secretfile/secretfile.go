// Package secretfile reads a secret kept in a file (the webhook secret, the status bearer token)
// and follows the file as it is rotated. It applies config.CheckSecretFile, the rule `validate`
// applies, every time it reads. It never logs or returns the secret's bytes in an error.
package secretfile

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/runner-manager/runner-manager/config"
)

// File is a secret kept in a file. Each Secret call stats the file (cheap next to a TLS handshake)
// and re-reads it when it changed, so rotating the secret is: write the new one where it is used
// and in the file, in either order. A file that becomes unusable keeps the last good secret in use.
type File struct {
	path string
	key  string // the setting that names the file, for messages
	log  *slog.Logger

	mu      sync.Mutex
	secret  []byte
	stat    os.FileInfo
	lastErr string // the last re-read failure logged, so a broken file is reported once, not per request
}

// Open reads path (named by setting key, e.g. "webhook.secret_file") once and refuses a file that
// is missing, empty, or breaks config.CheckSecretFile. log may be nil; a warning of the rule (a
// group-readable file) is logged there.
func Open(key, path string, log *slog.Logger) (*File, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &File{path: path, key: key, log: log}
	fi, secret, err := f.read()
	if err != nil {
		return nil, err
	}
	f.stat, f.secret = fi, secret
	return f, nil
}

// Secret returns the current secret, re-reading the file if its size, mtime or inode changed.
func (f *File) Secret() ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := os.Stat(f.path)
	if err == nil && sameVersion(fi, f.stat) {
		return f.secret, nil
	}
	fi, secret, err := f.read()
	if err != nil {
		if msg := err.Error(); msg != f.lastErr {
			f.lastErr = msg
			f.log.Warn(f.key+" changed but cannot be used; keeping the previous secret", "err", err)
		}
		return f.secret, nil
	}
	f.lastErr = ""
	f.log.Info(f.key+" reloaded", "file", f.path)
	f.stat, f.secret = fi, secret
	return secret, nil
}

func (f *File) read() (os.FileInfo, []byte, error) {
	warning, err := config.CheckSecretFile(f.path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.key, err)
	}
	if warning != "" {
		f.log.Warn(f.key+": "+warning, "file", f.path)
	}
	fi, err := os.Stat(f.path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.key, err)
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.key, err)
	}
	// Editors and `echo` add a trailing newline that is not part of the secret.
	secret := []byte(strings.TrimRight(string(b), "\r\n"))
	if len(secret) == 0 {
		return nil, nil, errors.New(f.key + " " + f.path + " is empty; put the secret in it")
	}
	return fi, secret, nil
}

// sameVersion treats a file as unchanged when it is the same inode with the same size and mtime;
// an atomic rename gives a new inode, an in-place edit a new mtime.
func sameVersion(a, b os.FileInfo) bool {
	return b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
