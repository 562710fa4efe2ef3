package webhook

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
)

// FileSecret is the webhook secret kept in webhook.secret_file. Each Secret call stats the file
// (cheap next to a TLS handshake) and re-reads it when it changed, so rotating the secret is:
// write the new one on GitHub and in the file, in either order, and redeliver anything that failed
// in between. A file that becomes unreadable or empty keeps the last good secret in use.
type FileSecret struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	secret  []byte
	stat    os.FileInfo
	lastErr string // the last re-read failure logged, so a broken file is reported once, not per request
}

// NewFileSecret reads path once and refuses a file that is missing, empty, or readable by group
// or others (the secret lets anyone forge deliveries). log may be nil.
func NewFileSecret(path string, log *slog.Logger) (*FileSecret, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &FileSecret{path: path, log: log}
	fi, secret, err := f.read()
	if err != nil {
		return nil, err
	}
	f.stat, f.secret = fi, secret
	return f, nil
}

// Secret returns the current secret, re-reading the file if its size, mtime or inode changed.
func (f *FileSecret) Secret() ([]byte, error) {
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
			f.log.Warn("webhook secret file changed but cannot be used; keeping the previous secret", "err", err)
		}
		return f.secret, nil
	}
	f.lastErr = ""
	f.log.Info("webhook secret reloaded", "file", f.path)
	f.stat, f.secret = fi, secret
	return secret, nil
}

func (f *FileSecret) read() (os.FileInfo, []byte, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook secret: %w; create it (chmod 600) and set webhook.secret_file", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, nil, fmt.Errorf("webhook secret %s is readable by others (mode %04o); run chmod 600 %s", f.path, perm, f.path)
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook secret: %w", err)
	}
	// Editors and `echo` add a trailing newline that is not part of the secret set on GitHub.
	secret := []byte(strings.TrimRight(string(b), "\r\n"))
	if len(secret) == 0 {
		return nil, nil, errors.New("webhook secret " + f.path + " is empty; put the webhook's secret in it")
	}
	return fi, secret, nil
}

// sameVersion treats a file as unchanged when it is the same inode with the same size and mtime;
// an atomic rename gives a new inode, an in-place edit a new mtime.
func sameVersion(a, b os.FileInfo) bool {
	return b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
