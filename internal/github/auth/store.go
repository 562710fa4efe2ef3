package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
)

// ErrNotSignedIn means the credential store holds no device-flow sign-in.
var ErrNotSignedIn = errors.New("not signed in to GitHub: run `runner-manager auth login`")

// Credential is one device-flow sign-in: a user access token and the refresh token that renews it.
// Its String and LogValue never show the tokens.
type Credential struct {
	AccessToken      string    `json:"access_token"`
	AccessExpiresAt  time.Time `json:"access_token_expires_at,omitzero"` // zero: the token does not expire
	RefreshToken     string    `json:"refresh_token,omitempty"`
	RefreshExpiresAt time.Time `json:"refresh_token_expires_at,omitzero"`
	Login            string    `json:"login"`
	ClientID         string    `json:"client_id"`
	// Host is the machine that signed in. Only that host renews the pair: renewal rotates both
	// tokens, so renewing another host's pair would sign that host out.
	Host     string    `json:"host"`
	IssuedAt time.Time `json:"issued_at"`
}

// Renewable reports whether the refresh token can still renew the pair at now.
func (c *Credential) Renewable(now time.Time) bool {
	return c.RefreshToken != "" && (c.RefreshExpiresAt.IsZero() || now.Before(c.RefreshExpiresAt))
}

// Expired reports whether the access token is past its expiry at now.
func (c *Credential) Expired(now time.Time) bool {
	return !c.AccessExpiresAt.IsZero() && !now.Before(c.AccessExpiresAt)
}

// String describes the sign-in without its tokens.
func (c *Credential) String() string {
	return fmt.Sprintf("GitHub sign-in of %s (client %s, host %s)", c.Login, c.ClientID, c.Host)
}

// Store is the credential directory <state_dir>/credentials (mode 0700) holding github-user.json
// (mode 0600). Writes are atomic (temp file, fsync, rename, fsync dir) and serialised across
// processes by a lock file, so a daemon renewing and an operator's `auth login` cannot interleave.
type Store struct {
	dir string
}

// NewStore returns the store under stateDir.
func NewStore(stateDir string) *Store { return &Store{dir: filepath.Join(stateDir, "credentials")} }

// Path is the credential file.
func (s *Store) Path() string { return filepath.Join(s.dir, "github-user.json") }

// Load reads the stored sign-in; ErrNotSignedIn if there is none.
func (s *Store) Load() (*Credential, error) {
	b, err := os.ReadFile(s.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotSignedIn
	}
	if err != nil {
		return nil, fmt.Errorf("read GitHub credential %s: %w (check the state directory's permissions)", s.Path(), err)
	}
	var c Credential
	if err := json.Unmarshal(b, &c); err != nil || c.AccessToken == "" {
		return nil, fmt.Errorf("GitHub credential %s is unreadable: run `runner-manager auth login` to replace it", s.Path())
	}
	return &c, nil
}

// Save writes c atomically with mode 0600 in a 0700 directory.
func (s *Store) Save(c *Credential) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create credential directory %s: %w", s.dir, err)
	}
	// MkdirAll keeps the mode of an existing directory; tighten it in case it was created looser.
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return fmt.Errorf("restrict credential directory %s: %w", s.dir, err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode GitHub credential: %w", err)
	}
	if err := atomicfile.Write(s.Path(), b, 0o600); err != nil {
		return fmt.Errorf("write GitHub credential: %w", err)
	}
	return nil
}

// Remove deletes the stored sign-in (missing is not an error).
func (s *Store) Remove() error {
	if err := os.Remove(s.Path()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove GitHub credential %s: %w", s.Path(), err)
	}
	return nil
}

// Lock takes the cross-process store lock; the returned func releases it.
func (s *Store) Lock(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create credential directory %s: %w", s.dir, err)
	}
	l := flock.New(filepath.Join(s.dir, "github-user.lock"), flock.SetPermissions(0o600))
	ok, err := l.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		return nil, fmt.Errorf("lock GitHub credential store %s: %w", s.dir, errors.Join(err, ctx.Err()))
	}
	return func() { _ = l.Unlock() }, nil
}
