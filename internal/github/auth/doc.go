// Package auth owns the credentials runner-manager presents to GitHub: a token file that is re-read
// when it changes, a GitHub App installation (ghinstallation), and a device-flow user sign-in whose
// token pair is stored in the state directory and renewed before it expires.
//
// It never logs or formats a token, JWT, refresh token or private key: errors name the credential
// (its file, App id, or login), never its value. It never revokes a token either: a new `auth login`
// simply replaces the stored pair, so a daemon still holding the old one keeps working until it
// re-reads the store.
package auth

import (
	"context"
	"time"
)

// Source supplies the credential for each request. Implementations are safe for concurrent use.
type Source interface {
	// Token returns the token to send for a request about owner (an organisation or user login;
	// only GitHub App sources use it, to pick the installation).
	Token(ctx context.Context, owner string) (string, error)
	// Reload is called once after GitHub answered 401 to a token from this source. It re-reads the
	// credential from where it lives and reports whether a different one is now in use, i.e.
	// whether repeating the request can succeed.
	Reload(ctx context.Context, owner string) (bool, error)
	// Describe names the credential for operator messages (never its value).
	Describe() string
}

// Clock tells the time; tests inject a fake one so expiry decisions need no real waiting.
type Clock interface{ Now() time.Time }

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// SleepFunc waits for d or until ctx is done; tests inject one that advances a fake clock.
type SleepFunc func(ctx context.Context, d time.Duration) error

// Sleep is the real SleepFunc.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
