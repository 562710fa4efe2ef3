package github

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/github/auth"
)

const clientID = "Iv1.runnermanager"

func deviceConfig(s *sim) config.GitHub {
	return config.GitHub{APIURL: s.srv.URL(), DeviceFlow: &config.DeviceFlow{ClientID: clientID}}
}

// signIn plays `runner-manager auth login` against the simulator, the user approving in the
// browser while the CLI polls.
func (s *sim) signIn(stateDir string) *auth.Credential {
	s.t.Helper()
	s.srv.CreateOAuthClient(clientID)
	var out bytes.Buffer
	approve := func(ctx context.Context, d time.Duration) error {
		for _, code := range s.srv.PendingUserCodes() {
			if err := s.srv.ApproveDevice(code, "octocat"); err != nil {
				return err
			}
		}
		return s.sleep(ctx, d)
	}
	c, err := SignIn(context.Background(), deviceConfig(s), stateDir, SignInOptions{Out: &out, Clock: s.clock, Sleep: approve})
	if err != nil {
		s.t.Fatal(err)
	}
	if !strings.Contains(out.String(), s.srv.URL()+"/login/device and enter the code ") {
		s.t.Fatalf("login printed %q", out.String())
	}
	return c
}

func (s *sim) deviceClient(stateDir string) *Client {
	s.t.Helper()
	c, err := NewFromConfig(deviceConfig(s), stateDir, s.options())
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

func TestDeviceFlowRenewalAcrossEightHours(t *testing.T) {
	s := newSim(t)
	dir := t.TempDir()
	first := s.signIn(dir)
	if first.Login != "octocat" || !first.AccessExpiresAt.Equal(s.clock.Now().Add(8*time.Hour)) {
		t.Fatalf("credential %v expires %v", first, first.AccessExpiresAt)
	}
	fi, err := os.Stat(auth.NewStore(dir).Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credential file mode %v, %v", fi.Mode().Perm(), err)
	}
	c := s.deviceClient(dir)
	ctx := context.Background()
	s.srv.QueueJob("acme/api", []string{"linux"}, -1)
	for step := 0; step < 6*24; step++ { // a day and a night, polling every 10 minutes
		jobs, err := c.QueuedJobs(ctx, repoScope, []string{"linux"})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("at %v: %d jobs, %v", time.Duration(step)*10*time.Minute, len(jobs), err)
		}
		s.clock.Advance(10 * time.Minute)
	}
	stored, err := auth.NewStore(dir).Load()
	if err != nil || stored.AccessToken == first.AccessToken || stored.RefreshToken == first.RefreshToken {
		t.Fatalf("stored pair not renewed: %v", err)
	}
	if !stored.AccessExpiresAt.After(s.clock.Now()) || stored.Login != "octocat" {
		t.Fatalf("stored expiry %v at %v", stored.AccessExpiresAt, s.clock.Now())
	}
	renewals := 0
	for _, r := range s.Requests() {
		if r.Endpoint == "POST /login/oauth/access_token" {
			renewals++
		}
	}
	if renewals != 3 { // at about 7h50m, 15h40m and 23h30m
		t.Fatalf("%d renewals in 24 h, want 3", renewals)
	}
	if n := countStatus(s.Requests(), 401); n != 0 {
		t.Fatalf("%d requests were refused: renewal came too late", n)
	}
	st, err := SignInStatus(ctx, deviceConfig(s), dir, SignInOptions{Clock: s.clock})
	if err != nil || st.Login != "octocat" || !st.Renewable || st.Expired || st.Check != nil {
		t.Fatalf("status %+v, %v", st, err)
	}
}

func TestDeadCredentialPicksUpNewLogin(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill func(s *sim, dir string)
	}{
		{"refresh token expired", func(s *sim, _ string) { s.clock.Advance(10 * time.Hour) }},
		{"refresh token used elsewhere", func(s *sim, dir string) {
			// A copy of the state dir renewed the pair: this daemon's refresh token is dead.
			c, _ := auth.NewStore(dir).Load()
			web, _ := auth.WebURLFor(s.srv.URL())
			if _, err := (&auth.DeviceFlow{WebURL: web, ClientID: clientID, Clock: s.clock}).Refresh(context.Background(), c.RefreshToken); err != nil {
				s.t.Fatal(err)
			}
			s.clock.Advance(8 * time.Hour)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSimOpts(t, ghsim.Options{RefreshTokenTTL: 9 * time.Hour})
			dir := t.TempDir()
			s.signIn(dir)
			c := s.deviceClient(dir)
			ctx := context.Background()
			if _, err := c.ListRunners(ctx, repoScope); err != nil {
				t.Fatal(err)
			}
			tc.kill(s, dir)
			_, err := c.ListRunners(ctx, repoScope)
			if !IsUnauthorized(err) || !strings.Contains(err.Error(), "run `runner-manager auth login` on this host") {
				t.Fatalf("dead credential: %v", err)
			}
			st, _ := SignInStatus(ctx, deviceConfig(s), dir, SignInOptions{Clock: s.clock})
			if st.Login != "" || st.Check == nil && !st.Expired {
				t.Fatalf("status of a dead sign-in %+v", st)
			}
			s.signIn(dir) // the operator signs in again; the daemon is not restarted
			if _, err := c.ListRunners(ctx, repoScope); err != nil {
				t.Fatalf("after auth login: %v", err)
			}
		})
	}
}

func TestSignOutAndStatus(t *testing.T) {
	s := newSim(t)
	dir := t.TempDir()
	if _, err := SignInStatus(context.Background(), deviceConfig(s), dir, SignInOptions{}); !errors.Is(err, auth.ErrNotSignedIn) {
		t.Fatalf("status before login: %v", err)
	}
	s.signIn(dir)
	if err := SignOut(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := NewFromConfig(deviceConfig(s), dir, s.options()); !errors.Is(err, auth.ErrNotSignedIn) {
		t.Fatalf("client after logout: %v", err)
	}
}

func TestSignInDeniedAndMissingClientID(t *testing.T) {
	s := newSim(t)
	s.srv.CreateOAuthClient(clientID)
	deny := func(ctx context.Context, d time.Duration) error {
		for _, code := range s.srv.PendingUserCodes() {
			_ = s.srv.DenyDevice(code)
		}
		return s.sleep(ctx, d)
	}
	dir := t.TempDir()
	_, err := SignIn(context.Background(), deviceConfig(s), dir, SignInOptions{Clock: s.clock, Sleep: deny})
	if err == nil || !strings.Contains(err.Error(), "declined") {
		t.Fatalf("denied: %v", err)
	}
	if _, err := os.Stat(auth.NewStore(dir).Path()); !os.IsNotExist(err) {
		t.Fatal("a declined sign-in left a credential")
	}
	if _, err := SignIn(context.Background(), config.GitHub{APIURL: s.srv.URL()}, dir, SignInOptions{}); err == nil || !strings.Contains(err.Error(), "client_id") {
		t.Fatalf("no client id: %v", err)
	}
}
