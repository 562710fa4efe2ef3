package ghsim

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

func get(t *testing.T, s *Server, tok, path, etag string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL()+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestConditionalPollsCostNothing: 100 polls of an unchanged list with If-None-Match get 304
// and leave the budget untouched; a change yields a new ETag and a counted 200.
func TestConditionalPollsCostNothing(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	tok := s.AddToken(TokenOptions{})
	const path = "/repos/acme/api/actions/runs?status=queued"
	first := get(t, s, tok, path, "")
	etag := first.Header.Get("ETag")
	if first.StatusCode != 200 || etag == "" || first.Header.Get("X-Ratelimit-Used") != "1" {
		t.Fatalf("first poll: %d etag=%q used=%s", first.StatusCode, etag, first.Header.Get("X-Ratelimit-Used"))
	}
	for range 100 {
		if r := get(t, s, tok, path, etag); r.StatusCode != http.StatusNotModified || r.Header.Get("X-Ratelimit-Remaining") != "4999" {
			t.Fatalf("conditional poll: %d remaining=%s", r.StatusCode, r.Header.Get("X-Ratelimit-Remaining"))
		}
	}
	if _, used, _ := s.RateUsage(tok); used != 1 {
		t.Fatalf("used after 100 conditional polls = %d, want 1", used)
	}
	if _, err := s.QueueJob("acme/api", []string{"linux"}, 0); err != nil {
		t.Fatal(err)
	}
	r := get(t, s, tok, path, etag)
	if r.StatusCode != 200 || r.Header.Get("ETag") == etag {
		t.Fatalf("after a change: %d etag=%q", r.StatusCode, r.Header.Get("ETag"))
	}
	// go-github surfaces the same headers as its Rate.
	gh := newClient(t, s, tok)
	_, resp, err := gh.Actions.ListRepositoryWorkflowRuns(context.Background(), "acme", "api", nil)
	if err != nil || resp.Rate.Limit != 5000 || resp.Rate.Remaining != 4997 || resp.Rate.Reset.IsZero() {
		t.Fatalf("rate via go-github = %+v, %v", resp.Rate, err)
	}
}

// TestBudgetExhaustionAndReset crosses a rate-limit window with a fake clock.
func TestBudgetExhaustionAndReset(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	s := newTestServer(t, Options{Clock: clock, RateLimit: 3})
	s.CreateRepo("acme", "api")
	tok := s.AddToken(TokenOptions{})
	gh := newClient(t, s, tok)
	ctx := context.Background()
	for i := range 3 {
		if _, _, err := gh.Actions.ListRunners(ctx, "acme", "api", nil); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	_, resp, err := gh.Actions.ListRunners(ctx, "acme", "api", nil)
	var rle *github.RateLimitError
	if !asErr(err, &rle) || resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Ratelimit-Remaining") != "0" {
		t.Fatalf("4th request: %v (status %d)", err, resp.StatusCode)
	}
	reset, _ := strconv.ParseInt(resp.Header.Get("X-Ratelimit-Reset"), 10, 64)
	if want := clock.Now().Add(time.Hour).Unix(); reset != want {
		t.Fatalf("reset = %d, want %d", reset, want)
	}
	// GET /rate_limit is free even when exhausted.
	rl, _, err := gh.RateLimit.Get(ctx)
	if err != nil || rl.Core.Remaining != 0 || rl.Core.Limit != 3 {
		t.Fatalf("rate_limit = %+v, %v", rl, err)
	}
	clock.Advance(time.Hour)
	if _, resp, err := gh.Actions.ListRunners(ctx, "acme", "api", nil); err != nil || resp.Rate.Remaining != 2 {
		t.Fatalf("after reset: %v remaining=%d", err, resp.Rate.Remaining)
	}
	s.ExhaustBudget(tok)
	if _, _, err := gh.Actions.ListRunners(ctx, "acme", "api", nil); !asErr(err, &rle) {
		t.Fatalf("after ExhaustBudget: %v", err)
	}
}

// TestTokenExpiryAndRevocation: an expiring PAT dies at its expiry on the fake clock; a revoked one at once.
func TestTokenExpiryAndRevocation(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	s := newTestServer(t, Options{Clock: clock})
	s.CreateRepo("acme", "api")
	exp := s.AddToken(TokenOptions{ExpiresIn: 8 * time.Hour})
	rev := s.AddToken(TokenOptions{})
	if r := get(t, s, exp, "/repos/acme/api/actions/runners", ""); r.StatusCode != 200 {
		t.Fatalf("fresh token: %d", r.StatusCode)
	}
	clock.Advance(8 * time.Hour)
	if r := get(t, s, exp, "/repos/acme/api/actions/runners", ""); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("expired token: %d", r.StatusCode)
	}
	s.RevokeToken(rev)
	if r := get(t, s, rev, "/repos/acme/api/actions/runners", ""); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("revoked token: %d", r.StatusCode)
	}
}
