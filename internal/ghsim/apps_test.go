package ghsim

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v62/github"
)

func appJWT(t *testing.T, key *rsa.PrivateKey, appID int64, iat, exp time.Time) string {
	t.Helper()
	return appJWTIss(t, key, strconv.FormatInt(appID, 10), iat, exp)
}

// appJWTIss is appJWT with any iss: a client ID, as GitHub recommends since 2024.
func appJWTIss(t *testing.T, key *rsa.PrivateKey, iss string, iat, exp time.Time) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{Issuer: iss,
		IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(exp)})
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestInstallationTokenViaGhinstallation is the path internal/github takes: ghinstallation signs
// the JWT, the simulator verifies it and issues a ghs_ token scoped to the installation.
func TestInstallationTokenViaGhinstallation(t *testing.T) {
	ctx := context.Background()
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	s.CreateRepo("acme", "web")
	s.CreateRepo("other", "x")
	key := rsaKey(t)
	s.CreateApp(77, &key.PublicKey)
	instID, err := s.CreateInstallation(77, "acme", "acme/api")
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})

	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, 77, pemKey)
	if err != nil {
		t.Fatal(err)
	}
	atr.BaseURL = s.URL()
	appClient := github.NewClient(&http.Client{Transport: atr})
	appClient.BaseURL, _ = url.Parse(s.URL() + "/")
	inst, _, err := appClient.Apps.FindOrganizationInstallation(ctx, "acme")
	if err != nil || inst.GetID() != instID {
		t.Fatalf("find installation: %v %v", inst.GetID(), err)
	}

	itr, err := ghinstallation.New(http.DefaultTransport, 77, instID, pemKey)
	if err != nil {
		t.Fatal(err)
	}
	itr.BaseURL = s.URL()
	gh := github.NewClient(&http.Client{Transport: itr})
	gh.BaseURL, _ = url.Parse(s.URL() + "/")
	repos, _, err := gh.Apps.ListRepos(ctx, nil)
	if err != nil || repos.GetTotalCount() != 1 || repos.Repositories[0].GetFullName() != "acme/api" {
		t.Fatalf("installation repos = %+v, %v", repos, err)
	}
	if _, _, err := gh.Actions.ListRunners(ctx, "acme", "web", nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("repo outside the installation: %v, want 404", err)
	}
	if _, _, err := gh.Actions.GenerateOrgJITConfig(ctx, "acme", jitReq("org-r", "linux")); err != nil {
		t.Fatalf("org JIT with installation token: %v", err)
	}
}

func TestAppJWTValidation(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	s := newTestServer(t, Options{Clock: clock})
	s.CreateOrg("acme")
	key, wrong := rsaKey(t), rsaKey(t)
	s.CreateApp(5, &key.PublicKey)
	s.CreateApp(6, &wrong.PublicKey)
	instID, _ := s.CreateInstallation(5, "acme")
	if id := AppClientID(5); !regexp.MustCompile(`^Iv23[A-Za-z0-9]{16}$`).MatchString(id) || id == AppClientID(6) {
		t.Fatalf("client ID %q is not GitHub's Iv23 form (20 characters), or not the App's own", id)
	}
	now := clock.Now()
	hs, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Issuer: "5",
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))}).SignedString([]byte("k"))
	for _, tc := range []struct {
		name string
		jwt  string
		want int
	}{
		{"valid", appJWT(t, key, 5, now.Add(-30*time.Second), now.Add(9*time.Minute)), http.StatusCreated},
		{"expired", appJWT(t, key, 5, now.Add(-20*time.Minute), now.Add(-10*time.Minute)), http.StatusUnauthorized},
		{"too-long", appJWT(t, key, 5, now, now.Add(time.Hour)), http.StatusUnauthorized},
		{"issued-in-future", appJWT(t, key, 5, now.Add(5*time.Minute), now.Add(9*time.Minute)), http.StatusUnauthorized},
		{"wrong-key", appJWT(t, wrong, 5, now, now.Add(5*time.Minute)), http.StatusUnauthorized},
		{"unknown-app", appJWT(t, key, 7, now, now.Add(5*time.Minute)), http.StatusUnauthorized},
		{"another-app's-id", appJWT(t, key, 6, now, now.Add(5*time.Minute)), http.StatusUnauthorized},
		{"client-id", appJWTIss(t, key, AppClientID(5), now, now.Add(5*time.Minute)), http.StatusCreated},
		{"another-app's-client-id", appJWTIss(t, key, AppClientID(6), now, now.Add(5*time.Minute)), http.StatusUnauthorized},
		{"unknown-client-id", appJWTIss(t, key, "Iv23liunknown0000000", now, now.Add(5*time.Minute)), http.StatusUnauthorized},
		{"hs256", hs, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := newClient(t, s, tc.jwt)
			tok, resp, err := gh.Apps.CreateInstallationToken(context.Background(), instID, nil)
			if resp == nil || resp.StatusCode != tc.want {
				t.Fatalf("status %v, err %v; want %d", resp, err, tc.want)
			}
			if tc.want == http.StatusCreated && (tok.GetExpiresAt().Sub(now) != time.Hour || tok.GetToken()[:4] != "ghs_") {
				t.Fatalf("token = %+v", tok)
			}
		})
	}
	// An installation token expires after an hour on the simulator's clock.
	gh := newClient(t, s, appJWT(t, key, 5, now, now.Add(5*time.Minute)))
	tok, _, err := gh.Apps.CreateInstallationToken(context.Background(), instID, nil)
	if err != nil {
		t.Fatal(err)
	}
	ig := newClient(t, s, tok.GetToken())
	if _, _, err := ig.Actions.ListOrganizationRunners(context.Background(), "acme", nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if _, _, err := ig.Actions.ListOrganizationRunners(context.Background(), "acme", nil); statusOf(err) != http.StatusUnauthorized {
		t.Fatalf("expired installation token: %v", err)
	}

	// Without administration: write, the runner endpoints refuse with GitHub's integration message.
	if err := s.SetInstallationAdmin(instID, false); err != nil {
		t.Fatal(err)
	}
	gh = newClient(t, s, appJWT(t, key, 5, clock.Now(), clock.Now().Add(5*time.Minute)))
	tok, _, err = gh.Apps.CreateInstallationToken(context.Background(), instID, nil)
	if err != nil || tok.GetPermissions().GetAdministration() != "read" {
		t.Fatalf("read-only installation token: %+v %v", tok.GetPermissions(), err)
	}
	_, _, err = newClient(t, s, tok.GetToken()).Actions.GenerateOrgJITConfig(context.Background(), "acme", jitReq("x", "linux"))
	var ge *github.ErrorResponse
	if !errors.As(err, &ge) || ge.Response.StatusCode != http.StatusForbidden || ge.Message != "Resource not accessible by integration" {
		t.Fatalf("JIT without administration: %v", err)
	}
}
