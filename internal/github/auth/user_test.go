package auth

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// signIn runs a real device login against srv and stores it as host would.
func signIn(t *testing.T, srv *oauthServer, store *Store, host string) *Credential {
	t.Helper()
	c, err := srv.flow().Login(context.Background(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	c.Login, c.Host = "octocat", host
	if err := store.Save(c); err != nil {
		t.Fatal(err)
	}
	return c
}

func newTestUser(t *testing.T, srv *oauthServer, store *Store, host string) *User {
	t.Helper()
	u, err := NewUser(UserOptions{Store: store, Flow: srv.flow(), Host: host, Clock: srv.clock})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// userFixture is a sign-in made on signedOn, held by a User running on runsOn.
type userFixture struct {
	clock *fakeClock
	srv   *oauthServer
	store *Store
	first *Credential
	u     *User
}

func newUserFixture(t *testing.T, signedOn, runsOn string) userFixture {
	t.Helper()
	clock := newFakeClock()
	srv := newOAuthServer(t, clock)
	store := NewStore(t.TempDir())
	first := signIn(t, srv, store, signedOn)
	return userFixture{clock, srv, store, first, newTestUser(t, srv, store, runsOn)}
}

// revokeRefresh makes every refresh token issued so far unusable, as a revocation at GitHub does.
func (f userFixture) revokeRefresh() {
	f.srv.mu.Lock()
	f.srv.valid = map[string]bool{}
	f.srv.mu.Unlock()
}

func (f userFixture) setDown(down bool) {
	f.srv.mu.Lock()
	f.srv.down = down
	f.srv.mu.Unlock()
}

func TestUserRenewsAcrossEightHours(t *testing.T) {
	ctx := context.Background()
	f := newUserFixture(t, "h1", "h1")
	clock, srv, store, u := f.clock, f.srv, f.store, f.u
	first := f.first

	clock.Advance(7*time.Hour + 44*time.Minute) // 16 min left: no renewal yet
	if tok, err := u.Token(ctx, ""); err != nil || tok != first.AccessToken {
		t.Fatalf("before the renewal window: %q, %v", tok, err)
	}
	clock.Advance(2 * time.Minute) // 14 min left: renew
	tok, err := u.Token(ctx, "")
	if err != nil || tok == first.AccessToken {
		t.Fatalf("in the renewal window: %q, %v", tok, err)
	}
	stored, err := store.Load()
	if err != nil || stored.AccessToken != tok || stored.RefreshToken == first.RefreshToken || stored.Login != "octocat" || stored.Host != "h1" {
		t.Fatalf("stored pair %+v, %v", stored, err)
	}
	if !stored.AccessExpiresAt.Equal(clock.Now().Add(8 * time.Hour)) {
		t.Fatalf("new expiry %v", stored.AccessExpiresAt)
	}
	// A full day of renewals, each 8 h apart.
	for i := 0; i < 3; i++ {
		clock.Advance(8 * time.Hour)
		if _, err := u.Token(ctx, ""); err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
	}
	if srv.issued != 5 {
		t.Fatalf("issued %d pairs, want 5 (login + 4 renewals)", srv.issued)
	}
}

func TestUserDeadCredentialPicksUpNewLogin(t *testing.T) {
	ctx := context.Background()
	f := newUserFixture(t, "h1", "h1")
	clock, srv, store, u := f.clock, f.srv, f.store, f.u
	f.revokeRefresh()

	clock.Advance(8 * time.Hour)
	_, err := u.Token(ctx, "")
	var ic *InvalidCredentialError
	if !errors.As(err, &ic) || !ic.Unauthorized() {
		t.Fatalf("dead credential: err = %v", err)
	}
	if _, err := u.Token(ctx, ""); !errors.As(err, &ic) {
		t.Fatalf("still dead: err = %v", err)
	}
	// The operator signs in again (a second process, same store).
	fresh := signIn(t, srv, store, "h1")
	if tok, err := u.Token(ctx, ""); err != nil || tok != fresh.AccessToken {
		t.Fatalf("after auth login: %q, %v", tok, err)
	}
}

func TestUserReloadAfter401(t *testing.T) {
	ctx := context.Background()
	f := newUserFixture(t, "h1", "h1")
	srv, store, u := f.srv, f.store, f.u
	old := f.first

	// 401 with a live refresh token: one renewal, then the new token.
	changed, err := u.Reload(ctx, "")
	if err != nil || !changed {
		t.Fatalf("Reload = %v, %v", changed, err)
	}
	if tok, _ := u.Token(ctx, ""); tok == old.AccessToken {
		t.Fatal("Reload did not switch tokens")
	}
	// 401 again with a dead refresh token: dead until a new sign-in is stored.
	f.revokeRefresh()
	if changed, err := u.Reload(ctx, ""); changed || err == nil {
		t.Fatalf("Reload of a dead pair = %v, %v", changed, err)
	}
	fresh := signIn(t, srv, store, "h1")
	if changed, err := u.Reload(ctx, ""); !changed || err != nil {
		t.Fatalf("Reload after auth login = %v, %v", changed, err)
	}
	if tok, _ := u.Token(ctx, ""); tok != fresh.AccessToken {
		t.Fatal("new sign-in not used")
	}
}

func TestUserNeverRenewsAnotherHostsPair(t *testing.T) {
	ctx := context.Background()
	f := newUserFixture(t, "h2", "h1")
	clock, srv, u := f.clock, f.srv, f.u
	clock.Advance(8 * time.Hour)
	_, err := u.Token(ctx, "")
	var ic *InvalidCredentialError
	if !errors.As(err, &ic) {
		t.Fatalf("err = %v", err)
	}
	if srv.issued != 1 {
		t.Fatalf("renewed another host's pair (%d pairs issued)", srv.issued)
	}
}

func TestTwoHostsSameUserKeepTheirPairs(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	srv := newOAuthServer(t, clock)
	s1, s2 := NewStore(t.TempDir()), NewStore(t.TempDir())
	signIn(t, srv, s1, "h1")
	signIn(t, srv, s2, "h2")
	u1, u2 := newTestUser(t, srv, s1, "h1"), newTestUser(t, srv, s2, "h2")
	clock.Advance(8 * time.Hour)
	t1, err1 := u1.Token(ctx, "")
	t2, err2 := u2.Token(ctx, "")
	if err1 != nil || err2 != nil || t1 == t2 {
		t.Fatalf("host tokens %q %v / %q %v", t1, err1, t2, err2)
	}
}

func TestUserTransientRenewalFailureKeepsToken(t *testing.T) {
	ctx := context.Background()
	f := newUserFixture(t, "h1", "h1")
	clock, srv, store, u := f.clock, f.srv, f.store, f.u
	first := f.first
	f.setDown(true) // GitHub's sign-in host fails
	clock.Advance(7*time.Hour + 50*time.Minute)
	for i := 0; i < 10; i++ { // ten requests within a minute: one renewal attempt
		if tok, err := u.Token(ctx, ""); err != nil || tok != first.AccessToken {
			t.Fatalf("with 10 min left: %q, %v", tok, err)
		}
		clock.Advance(5 * time.Second)
	}
	clock.Advance(15 * time.Second)
	u.Token(ctx, "")
	if srv.tries != 2 {
		t.Fatalf("%d renewal attempts in 65 s, want 2", srv.tries)
	}
	f.setDown(false)
	clock.Advance(time.Minute)
	if tok, err := u.Token(ctx, ""); err != nil || tok == first.AccessToken {
		t.Fatalf("after the host recovered: %q, %v", tok, err)
	}
	f.setDown(true)
	clock.Advance(8 * time.Hour)
	if _, err := u.Token(ctx, ""); err == nil {
		t.Fatal("expired token handed out")
	}
	if _, err := os.Stat(store.Path()); err != nil {
		t.Fatal(err)
	}
}

func TestUserReloadNetworkFailureIsNotDeath(t *testing.T) {
	ctx := context.Background()
	f := newUserFixture(t, "h1", "h1")
	f.setDown(true)
	if changed, err := f.u.Reload(ctx, ""); changed || err == nil {
		t.Fatalf("Reload with the sign-in host down = %v, %v", changed, err)
	}
	var ic *InvalidCredentialError
	if _, err := f.u.Token(ctx, ""); errors.As(err, &ic) {
		t.Fatalf("a network failure killed the credential: %v", err)
	}
	f.setDown(false)
	if changed, err := f.u.Reload(ctx, ""); !changed || err != nil {
		t.Fatalf("Reload after recovery = %v, %v", changed, err)
	}
}
