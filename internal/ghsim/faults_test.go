package ghsim

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }

func TestFaults(t *testing.T) {
	const runners = "/repos/acme/api/actions/runners"
	for _, tc := range []struct {
		name  string
		fault Fault
		check func(t *testing.T, resp *github.Response, err error)
	}{
		{"status-503", Fault{Path: runners, Kind: FaultStatus, Status: 503}, func(t *testing.T, resp *github.Response, err error) {
			if resp == nil || resp.StatusCode != 503 {
				t.Fatalf("got %v", err)
			}
		}},
		{"429-retry-after", Fault{Method: "GET", Path: "/repos/*/*/actions/runners", Kind: FaultRateLimited, RetryAfter: 7 * time.Second},
			func(t *testing.T, resp *github.Response, err error) {
				if resp == nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
					t.Fatalf("got %v", err)
				}
			}},
		{"403-secondary", Fault{Path: "/repos/**", Kind: FaultSecondary, RetryAfter: 30 * time.Second},
			func(t *testing.T, resp *github.Response, err error) {
				var ae *github.AbuseRateLimitError
				if !asErr(err, &ae) || ae.GetRetryAfter() != 30*time.Second || resp.StatusCode != 403 {
					t.Fatalf("got %v", err)
				}
			}},
		{"budget-exhausted", Fault{Kind: FaultBudgetExhausted, RetryAfter: 90 * time.Second},
			func(t *testing.T, resp *github.Response, err error) {
				var rle *github.RateLimitError
				if !asErr(err, &rle) || rle.Rate.Remaining != 0 || time.Until(rle.Rate.Reset.Time) < 60*time.Second {
					t.Fatalf("got %v", err)
				}
			}},
		{"401-revoked", Fault{Path: runners, Kind: FaultRevokedToken}, func(t *testing.T, resp *github.Response, err error) {
			if resp == nil || resp.StatusCode != 401 {
				t.Fatalf("got %v", err)
			}
		}},
		{"connection-reset", Fault{Kind: FaultConnectionReset}, func(t *testing.T, resp *github.Response, err error) {
			var ge *github.ErrorResponse
			if err == nil || asErr(err, &ge) {
				t.Fatalf("want a transport error, got %v", err)
			}
		}},
		{"latency", Fault{Kind: FaultLatency, Latency: 150 * time.Millisecond}, func(t *testing.T, resp *github.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, Options{})
			s.CreateRepo("acme", "api")
			tok := s.AddToken(TokenOptions{})
			gh := newClient(t, s, tok)
			id := s.AddFault(Fault{Path: "/repos/acme/other/**", Kind: FaultStatus}) // never matches
			fid := s.AddFault(withCount(tc.fault, 1))
			start := time.Now()
			_, resp, err := gh.Actions.ListRunners(context.Background(), "acme", "api", nil)
			tc.check(t, resp, err)
			if resp != nil && resp.Header.Get("X-Ratelimit-Limit") == "" {
				t.Error("fault answer without x-ratelimit-limit")
			}
			if tc.fault.Kind == FaultLatency && time.Since(start) < tc.fault.Latency {
				t.Fatalf("latency fault took %v", time.Since(start))
			}
			if s.FaultHits(fid) != 1 || s.FaultHits(id) != 0 {
				t.Fatalf("hits = %d/%d", s.FaultHits(fid), s.FaultHits(id))
			}
			// Count 1: the next request is served normally (raw, since go-github would wait out a limit itself).
			if r := get(t, s, tok, runners, ""); r.StatusCode != http.StatusOK {
				t.Fatalf("after the fault retired: %d", r.StatusCode)
			}
		})
	}
}

func withCount(f Fault, n int) Fault { f.Count = n; return f }

// TestFaultProbabilityIsSeeded: the same seed fires on the same requests.
func TestFaultProbabilityIsSeeded(t *testing.T) {
	pattern := func() []bool {
		s := newTestServer(t, Options{Seed: 42})
		s.CreateRepo("acme", "api")
		tok := s.AddToken(TokenOptions{})
		s.AddFault(Fault{Kind: FaultStatus, Status: 500, Probability: 0.5})
		var out []bool
		for range 20 {
			out = append(out, get(t, s, tok, "/repos/acme/api/actions/runners", "").StatusCode == 500)
		}
		return out
	}
	a, b := pattern(), pattern()
	fired := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seeded runs differ at %d", i)
		}
		if a[i] {
			fired++
		}
	}
	if fired == 0 || fired == 20 {
		t.Fatalf("probability 0.5 fired %d/20", fired)
	}
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	tok := s.AddToken(TokenOptions{})
	id := s.AddFault(Fault{Kind: FaultStatus, Status: 502})
	s.RemoveFault(id)
	if r := get(t, s, tok, "/repos/acme/api/actions/runners", ""); r.StatusCode != http.StatusOK {
		t.Fatalf("after RemoveFault: %d", r.StatusCode)
	}
}

// TestFaultScope: a global fault hits the API and package downloads but never the admin or
// fake-runner API, which tests need in order to observe and drive the simulator.
func TestFaultScope(t *testing.T) {
	s := newTestServer(t, Options{})
	s.ServeRunnerPackage(Package{Filename: "actions-runner-linux-x64-2.317.0.tar.gz", Path: "/nonexistent"})
	s.AddFault(Fault{Kind: FaultStatus, Status: 503})
	resp, err := http.Get(s.URL() + "/_ghsim/downloads/actions-runner-linux-x64-2.317.0.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("download under a global fault: %d", resp.StatusCode)
	}
	var jobs []Job
	if code := admin(t, s, "GET", "/jobs", nil, &jobs); code != http.StatusOK {
		t.Fatalf("admin API under a global fault: %d", code)
	}
}
