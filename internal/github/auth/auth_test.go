package auth

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTokenFileRotation(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte("ghp_first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := NewTokenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if tok, _ := tf.Token(ctx, ""); tok != "ghp_first" {
		t.Fatalf("token = %q", tok)
	}
	// Same size, different content: only the mtime tells the rotation apart.
	if err := os.WriteFile(p, []byte("ghp_other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	if tok, _ := tf.Token(ctx, ""); tok != "ghp_other" {
		t.Fatalf("after rotation token = %q", tok)
	}
	changed, err := tf.Reload(ctx, "")
	if err != nil || changed {
		t.Fatalf("Reload of an unchanged file = %v, %v; want false, nil", changed, err)
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tf.Reload(ctx, ""); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("empty file: err = %v", err)
	}
	if _, err := NewTokenFile(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "github.token_file") {
		t.Fatalf("missing file: err = %v", err)
	}
}

// TestTokenFileAppliesTheSecretFileRule: a token file another user could write (swapping the
// credential) is refused at start and when it changes, as validate refuses it.
func TestTokenFileAppliesTheSecretFileRule(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte("ghp_first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o620); err != nil {
		t.Fatal(err)
	}
	if _, err := NewTokenFile(p); err == nil || !strings.Contains(err.Error(), "writable by its group") {
		t.Fatalf("group-writable token file at start: err = %v", err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := NewTokenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o606); err != nil {
		t.Fatal(err)
	}
	if _, err := tf.Reload(t.Context(), ""); err == nil || strings.Contains(err.Error(), "ghp_first") {
		t.Fatalf("world-writable token file on reload: err = %v", err)
	}
}

func TestStoreModesAndAtomicity(t *testing.T) {
	dir := t.TempDir()
	s := NewStore(dir)
	if _, err := s.Load(); !errors.Is(err, ErrNotSignedIn) {
		t.Fatalf("empty store: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "credentials"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Credential{AccessToken: "ghu_x", RefreshToken: "ghr_y", Login: "octocat", ClientID: "Iv1.c", Host: "h1"}
	if err := s.Save(c); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{s.Path(): 0o600, filepath.Dir(s.Path()): 0o700} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s mode = %v, %v; want %v", path, fi.Mode().Perm(), err, want)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(s.Path()))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temp file left behind: %s", e.Name())
		}
	}
	got, err := s.Load()
	if err != nil || *got != *c {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	if strings.Contains(got.String(), "ghu_") || strings.Contains(got.String(), "ghr_") {
		t.Fatalf("String shows a token: %s", got)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
}

func TestDeviceLogin(t *testing.T) {
	cases := []struct {
		name      string
		polls     []string
		wantErr   string
		wantSleep []time.Duration
	}{
		{"approved after pending", []string{"authorization_pending", "authorization_pending", ""}, "", []time.Duration{5 * time.Second, 5 * time.Second, 5 * time.Second}},
		{"slow_down adds 5s", []string{"slow_down", "authorization_pending", ""}, "", []time.Duration{5 * time.Second, 10 * time.Second, 10 * time.Second}},
		{"slow_down without interval", []string{"slow_down_bare", "slow_down_bare", ""}, "", []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second}},
		{"expired", []string{"authorization_pending", "expired_token"}, "expired before it was entered", nil},
		{"denied", []string{"access_denied"}, "declined in the browser", nil},
		{"unknown", []string{"device_flow_disabled"}, "enable Device Flow", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			srv := newOAuthServer(t, clock, tc.polls...)
			var out bytes.Buffer
			c, err := srv.flow().Login(context.Background(), &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "Open " + srv.srv.URL + "/login/device and enter the code WDJB-MJHT\n"; out.String() != want {
				t.Fatalf("output %q, want %q", out.String(), want)
			}
			if got := clock.Sleeps(); !equalDurations(got, tc.wantSleep) {
				t.Fatalf("sleeps = %v, want %v", got, tc.wantSleep)
			}
			if !c.AccessExpiresAt.Equal(clock.Now().Add(8*time.Hour)) || !c.RefreshExpiresAt.Equal(clock.Now().Add(15811200*time.Second)) {
				t.Fatalf("expiries %v %v", c.AccessExpiresAt, c.RefreshExpiresAt)
			}
		})
	}
}

func TestDeviceLoginCodeExpiryByClock(t *testing.T) {
	clock := newFakeClock()
	pending := make([]string, 200)
	for i := range pending {
		pending[i] = "authorization_pending"
	}
	srv := newOAuthServer(t, clock, pending...)
	_, err := srv.flow().Login(context.Background(), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("err = %v", err)
	}
	if n := len(clock.Sleeps()); n != 180 { // 900 s / 5 s
		t.Fatalf("polled %d times, want 180", n)
	}
}

func TestDeviceLoginBadClientID(t *testing.T) {
	clock := newFakeClock()
	srv := newOAuthServer(t, clock)
	f := srv.flow()
	f.ClientID = "12345"
	_, err := f.Login(context.Background(), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "not its App ID") {
		t.Fatalf("err = %v", err)
	}
}

func TestDeviceLoginStopsAtCancel(t *testing.T) {
	clock := newFakeClock()
	srv := newOAuthServer(t, clock, "authorization_pending")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := srv.flow().Login(ctx, &bytes.Buffer{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestWebURLFor(t *testing.T) {
	for in, want := range map[string]string{
		"":                               "https://github.com",
		"https://api.github.com":         "https://github.com",
		"https://api.github.com/":        "https://github.com",
		"https://ghe.example.com/api/v3": "https://ghe.example.com",
		"http://127.0.0.1:8080":          "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/api/v3/":  "http://127.0.0.1:8080",
		"https://api.octocorp.ghe.com":   "https://octocorp.ghe.com", // GHE.com: sign in at SUBDOMAIN.ghe.com
		"https://API.Octocorp.GHE.com/":  "https://octocorp.ghe.com",
		"https://api.ghe.com":            "https://api.ghe.com", // not a SUBDOMAIN.ghe.com API host
	} {
		if got, err := WebURLFor(in); err != nil || got != want {
			t.Errorf("WebURLFor(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := WebURLFor("::"); err == nil {
		t.Error("WebURLFor(::) accepted a non-URL")
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
