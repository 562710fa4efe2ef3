package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// DefaultRenewBefore is how long before expiry a user access token is renewed: long enough that
// a renewal failing for a few poll intervals still leaves a working token.
const DefaultRenewBefore = 15 * time.Minute

// UserOptions configures NewUser.
type UserOptions struct {
	Store       *Store
	Flow        *DeviceFlow // renews the pair
	Host        string      // this machine's name; only pairs signed in here are renewed
	Clock       Clock
	RenewBefore time.Duration // 0 = DefaultRenewBefore
	Logger      *slog.Logger
}

// User is the device-flow sign-in held by a running daemon. It renews the pair near expiry and,
// once the pair can no longer be renewed (or GitHub rejects it), re-reads the store on every
// request until an operator's `auth login` puts a new pair there.
type User struct {
	o UserOptions

	mu        sync.Mutex
	cred      *Credential
	dead      error     // non-nil: cred is unusable; look for a new sign-in in the store
	nextRenew time.Time // after a transient renewal failure, not before this
}

// renewRetry spaces renewal attempts after a transient failure, so an unreachable sign-in host
// costs one attempt a minute rather than one per request.
const renewRetry = time.Minute

// NewUser loads the stored sign-in; ErrNotSignedIn (wrapped) if there is none.
func NewUser(o UserOptions) (*User, error) {
	if o.RenewBefore == 0 {
		o.RenewBefore = DefaultRenewBefore
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := o.Store.Load()
	if err != nil {
		return nil, err
	}
	return &User{o: o, cred: c}, nil
}

// Describe names the signed-in user.
func (u *User) Describe() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return "the GitHub sign-in of " + u.cred.Login
}

// Current returns a copy of the credential in use (for status; callers must not print tokens).
func (u *User) Current() Credential {
	u.mu.Lock()
	defer u.mu.Unlock()
	return *u.cred
}

// Token returns a live access token, renewing it first when it is within RenewBefore of expiry.
func (u *User) Token(ctx context.Context, _ string) (string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.dead != nil && !u.adoptStoredLocked() {
		return "", u.dead
	}
	now := u.o.Clock.Now()
	c := u.cred
	if c.AccessExpiresAt.IsZero() || now.Before(c.AccessExpiresAt.Add(-u.o.RenewBefore)) {
		return c.AccessToken, nil
	}
	if now.Before(u.nextRenew) && !c.Expired(now) {
		return c.AccessToken, nil
	}
	if err := u.renewLocked(ctx); err != nil {
		if u.dead == nil {
			u.nextRenew = now.Add(renewRetry)
		}
		if u.dead == nil && !c.Expired(now) {
			// A transient failure with time left: keep using the token, try again in a minute.
			u.o.Logger.Warn("GitHub sign-in renewal failed; will retry", "login", c.Login, "expires", c.AccessExpiresAt, "err", err)
			return c.AccessToken, nil
		}
		return "", err
	}
	return u.cred.AccessToken, nil
}

// Reload runs after a 401: a different pair in the store (a new `auth login`) is adopted; otherwise
// one renewal is tried (an access token revoked early may still have a live refresh token).
func (u *User) Reload(ctx context.Context, _ string) (bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.adoptStoredLocked() {
		return true, nil
	}
	if u.dead != nil {
		return false, u.dead
	}
	if err := u.renewLocked(ctx); err != nil {
		// renewLocked marked the pair dead if GitHub refused it; a network failure is not the
		// credential's fault, so the next 401 tries again.
		return false, err
	}
	return true, nil
}

// adoptStoredLocked switches to the stored pair when it differs from the one held.
func (u *User) adoptStoredLocked() bool {
	c, err := u.o.Store.Load()
	if err != nil || c.AccessToken == u.cred.AccessToken {
		return false
	}
	if c.Expired(u.o.Clock.Now()) && !c.Renewable(u.o.Clock.Now()) {
		return false
	}
	u.o.Logger.Info("using the GitHub sign-in found in the credential store", "login", c.Login, "expires", c.AccessExpiresAt)
	u.cred, u.dead = c, nil
	return true
}

// renewLocked trades the refresh token for a new pair under the store lock, unless the store
// already holds a newer pair (another process renewed or an operator signed in): then that is used.
func (u *User) renewLocked(ctx context.Context) error {
	now := u.o.Clock.Now()
	c := u.cred
	if c.Host != u.o.Host {
		u.dead = u.deadError(fmt.Sprintf("it was signed in on host %q and only that host may renew it", c.Host))
		return u.dead
	}
	if !c.Renewable(now) {
		u.dead = u.deadError("its refresh token has expired")
		return u.dead
	}
	unlock, err := u.o.Store.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if u.adoptStoredLocked() {
		return nil
	}
	next, err := u.o.Flow.Refresh(ctx, c.RefreshToken)
	if err != nil {
		var oe *OAuthError
		if errors.As(err, &oe) {
			u.dead = u.deadError("GitHub refused to renew it (" + oe.Code + ")")
			return u.dead
		}
		return err
	}
	next.Login, next.Host = c.Login, c.Host
	if err := u.o.Store.Save(next); err != nil {
		// The old pair is already dead at GitHub; keep the new one in memory so this process works.
		u.o.Logger.Error("renewed GitHub sign-in could not be stored; it will be lost on restart", "login", c.Login, "err", err)
	}
	u.o.Logger.Info("renewed GitHub sign-in", "login", c.Login, "expires", next.AccessExpiresAt)
	u.cred = next
	return nil
}

func (u *User) deadError(why string) error {
	return &InvalidCredentialError{Credential: "the GitHub sign-in of " + u.cred.Login,
		Reason: why + ": run `runner-manager auth login` on this host (the daemon picks the new sign-in up without a restart)"}
}
