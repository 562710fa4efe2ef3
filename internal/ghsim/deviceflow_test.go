package ghsim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func oauthPost(t *testing.T, s *Server, path string, form url.Values, asJSON bool) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL()+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if asJSON {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d", path, resp.StatusCode)
	}
	body, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	if asJSON {
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("%s: %v in %s", path, err, body)
		}
		return out
	}
	v, err := url.ParseQuery(string(body))
	if err != nil {
		t.Fatalf("%s: not form-encoded: %s", path, body)
	}
	for k := range v {
		out[k] = v.Get(k)
	}
	return out
}

func TestDeviceFlow(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	s := newTestServer(t, Options{Clock: clock})
	s.CreateRepo("acme", "api")
	s.CreateOAuthClient("Iv1.sim")

	// Default answer is form-encoded, as on GitHub.
	form := oauthPost(t, s, "/login/device/code", url.Values{"client_id": {"Iv1.sim"}}, false)
	if form["interval"] != "5" || form["expires_in"] != "900" || len(form["device_code"].(string)) != 40 {
		t.Fatalf("device code (form) = %v", form)
	}
	dc := oauthPost(t, s, "/login/device/code", url.Values{"client_id": {"Iv1.sim"}}, true)
	poll := url.Values{"client_id": {"Iv1.sim"}, "device_code": {dc["device_code"].(string)},
		"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}}
	expectErr := func(want string) map[string]any {
		t.Helper()
		r := oauthPost(t, s, "/login/oauth/access_token", poll, true)
		if r["error"] != want {
			t.Fatalf("poll = %v, want error %s", r, want)
		}
		return r
	}
	expectErr("authorization_pending")
	clock.Advance(2 * time.Second)
	if r := expectErr("slow_down"); r["interval"] != float64(10) {
		t.Fatalf("slow_down interval = %v, want 10", r["interval"])
	}
	clock.Advance(10 * time.Second)
	expectErr("authorization_pending")
	if err := s.ApproveDevice(dc["user_code"].(string), "mona"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Second)
	tok := oauthPost(t, s, "/login/oauth/access_token", poll, true)
	access, _ := tok["access_token"].(string)
	if !strings.HasPrefix(access, "ghu_") || tok["expires_in"] != float64(28800) || tok["refresh_token_expires_in"] != float64(15811200) ||
		!strings.HasPrefix(tok["refresh_token"].(string), "ghr_") || tok["token_type"] != "bearer" {
		t.Fatalf("token response = %v", tok)
	}
	expectErr("incorrect_device_code") // a used code cannot be redeemed twice

	u, _, err := newClient(t, s, access).Users.Get(t.Context(), "")
	if err != nil || u.GetLogin() != "mona" {
		t.Fatalf("GET /user = %v, %v", u.GetLogin(), err)
	}
	clock.Advance(8 * time.Hour)
	if r := get(t, s, access, "/user", ""); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after 8 h: %d, want 401", r.StatusCode)
	}
	// Refresh rotates: a new pair; the old refresh token is then bad_refresh_token.
	refresh := url.Values{"client_id": {"Iv1.sim"}, "grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}}
	next := oauthPost(t, s, "/login/oauth/access_token", refresh, false)
	if next["access_token"] == access || next["refresh_token"] == tok["refresh_token"] || next["expires_in"] != "28800" {
		t.Fatalf("refresh = %v", next)
	}
	if r := get(t, s, next["access_token"].(string), "/user", ""); r.StatusCode != http.StatusOK {
		t.Fatalf("refreshed token: %d", r.StatusCode)
	}
	if r := oauthPost(t, s, "/login/oauth/access_token", refresh, true); r["error"] != "bad_refresh_token" {
		t.Fatalf("reused refresh token = %v", r)
	}
}

func TestDeviceFlowDeniedExpiredAndBadClient(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	s := newTestServer(t, Options{Clock: clock, DeviceCodeTTL: time.Minute})
	s.CreateOAuthClient("Iv1.sim")
	code := func() url.Values {
		dc := oauthPost(t, s, "/login/device/code", url.Values{"client_id": {"Iv1.sim"}}, true)
		return url.Values{"client_id": {"Iv1.sim"}, "device_code": {dc["device_code"].(string)},
			"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "user_code": {dc["user_code"].(string)}}
	}
	denied := code()
	if err := s.DenyDevice(denied.Get("user_code")); err != nil {
		t.Fatal(err)
	}
	if r := oauthPost(t, s, "/login/oauth/access_token", denied, true); r["error"] != "access_denied" {
		t.Fatalf("denied = %v", r)
	}
	expired := code()
	clock.Advance(time.Minute)
	if r := oauthPost(t, s, "/login/oauth/access_token", expired, true); r["error"] != "expired_token" {
		t.Fatalf("expired = %v", r)
	}
	if r := oauthPost(t, s, "/login/device/code", url.Values{"client_id": {"nope"}}, true); r["error"] != "incorrect_client_credentials" {
		t.Fatalf("bad client = %v", r)
	}
	bad := code()
	bad.Set("grant_type", "password")
	if r := oauthPost(t, s, "/login/oauth/access_token", bad, true); r["error"] != "unsupported_grant_type" {
		t.Fatalf("bad grant = %v", r)
	}
}
