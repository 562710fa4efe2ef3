package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// fakeClock only moves when sleep is called or the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return nil
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// oauthServer mimics GitHub's device-flow and refresh endpoints as GitHub's docs describe them
// ("Authorizing OAuth apps", device flow; "Refreshing user access tokens"): JSON answers (Accept:
// application/json), errors as 200 with {"error": ...}, refresh rotating both tokens.
type oauthServer struct {
	t      *testing.T
	clock  *fakeClock
	mu     sync.Mutex
	polls  []string // scripted answers for successive polls: an error code, or "" for success
	issued int
	down   bool            // the token endpoint answers 502
	tries  int             // refresh requests seen
	valid  map[string]bool // live refresh tokens
	srv    *httptest.Server
}

func newOAuthServer(t *testing.T, clock *fakeClock, polls ...string) *oauthServer {
	o := &oauthServer{t: t, clock: clock, polls: polls, valid: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login/device/code", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("client_id") != "Iv1.testclient" {
			writeJSON(w, map[string]any{"error": "incorrect_client_credentials", "error_description": "The client_id and/or client_secret passed are incorrect."})
			return
		}
		writeJSON(w, map[string]any{"device_code": "3584d83530557fdd1f46af8289938c8ef79f9dc5", "user_code": "WDJB-MJHT",
			"verification_uri": o.srv.URL + "/login/device", "expires_in": 900, "interval": 5})
	})
	mux.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if r.FormValue("grant_type") == "refresh_token" {
			o.tries++
		}
		if o.down {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		switch r.FormValue("grant_type") {
		case "urn:ietf:params:oauth:grant-type:device_code":
			if len(o.polls) > 0 {
				code := o.polls[0]
				o.polls = o.polls[1:]
				if code != "" {
					ans := map[string]any{"error": code}
					if code == "slow_down" {
						ans["interval"] = 10
					}
					if code == "slow_down_bare" { // no new interval in the answer
						ans["error"] = "slow_down"
					}
					writeJSON(w, ans)
					return
				}
			}
			writeJSON(w, o.pairLocked())
		case "refresh_token":
			rt := r.FormValue("refresh_token")
			if !o.valid[rt] {
				writeJSON(w, map[string]any{"error": "bad_refresh_token", "error_description": "The refresh token passed is incorrect or expired."})
				return
			}
			delete(o.valid, rt) // rotation: a used refresh token is dead
			writeJSON(w, o.pairLocked())
		default:
			writeJSON(w, map[string]any{"error": "unsupported_grant_type"})
		}
	})
	o.srv = httptest.NewServer(mux)
	t.Cleanup(o.srv.Close)
	return o
}

func (o *oauthServer) pairLocked() map[string]any {
	o.issued++
	rt := "ghr_refresh" + string(rune('A'+o.issued))
	o.valid[rt] = true
	return map[string]any{"access_token": "ghu_access" + string(rune('A'+o.issued)), "token_type": "bearer", "scope": "",
		"expires_in": 28800, "refresh_token": rt, "refresh_token_expires_in": 15811200}
}

func (o *oauthServer) flow() *DeviceFlow {
	return &DeviceFlow{WebURL: o.srv.URL, ClientID: "Iv1.testclient", HTTPClient: o.srv.Client(), Clock: o.clock, Sleep: o.clock.Sleep}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
