package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

// TokenFile is a personal access token (or any static token) read from a file. The file is
// stat'ed on every request and re-read when its modification time or size changes, so a rotated
// token is used without a restart.
type TokenFile struct {
	path string

	mu    sync.Mutex
	token string
	mtime time.Time
	size  int64
}

// NewTokenFile reads the token at path once, so a missing or empty file is reported at startup.
func NewTokenFile(path string) (*TokenFile, error) {
	t := &TokenFile{path: path}
	if _, err := t.load(true); err != nil {
		return nil, err
	}
	return t, nil
}

// Token returns the file's current token.
func (t *TokenFile) Token(ctx context.Context, _ string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := t.loadLocked(false); err != nil {
		return "", err
	}
	return t.token, nil
}

// Reload re-reads the file unconditionally and reports whether the token differs.
func (t *TokenFile) Reload(ctx context.Context, _ string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return t.load(true)
}

// Describe names the file.
func (t *TokenFile) Describe() string { return "the token in " + t.path }

func (t *TokenFile) load(force bool) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.loadLocked(force)
}

func (t *TokenFile) loadLocked(force bool) (bool, error) {
	fi, err := os.Stat(t.path)
	if err != nil {
		return false, fmt.Errorf("read GitHub token file: %w (fix github.token_file or create the file)", err)
	}
	if !force && t.token != "" && fi.ModTime().Equal(t.mtime) && fi.Size() == t.size {
		return false, nil
	}
	// The rule validate applies: a token a job or another user could swap is refused.
	if _, err := config.CheckSecretFile(t.path); err != nil {
		return false, fmt.Errorf("GitHub token file: %w", err)
	}
	b, err := os.ReadFile(t.path)
	if err != nil {
		return false, fmt.Errorf("read GitHub token file: %w (fix github.token_file or its permissions)", err)
	}
	tok := string(bytes.TrimSpace(b))
	if tok == "" {
		return false, errors.New("GitHub token file " + t.path + " is empty: write the token into it")
	}
	changed := tok != t.token
	t.token, t.mtime, t.size = tok, fi.ModTime(), fi.Size()
	return changed, nil
}

// Static is a fixed token, for one-off calls such as checking who a fresh sign-in belongs to.
type Static struct {
	Value string
	Name  string // how to describe it, e.g. "the new sign-in"
}

// Token returns the fixed token.
func (s Static) Token(ctx context.Context, _ string) (string, error) { return s.Value, ctx.Err() }

// Reload never finds a different token.
func (s Static) Reload(ctx context.Context, _ string) (bool, error) { return false, ctx.Err() }

// Describe names the token.
func (s Static) Describe() string { return s.Name }
