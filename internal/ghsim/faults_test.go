package ghsim

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/runner-manager/runner-manager/internal/livetest"
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

// A latency fault serves the request after its delay even when the client gave up before: GitHub
// acts on a request it received whether or not its caller still waits (issue 15.5). Both a JIT
// POST (its body read before the wait) and a body-less DELETE (whose dropped connection ends the
// request's context at once) are served.
func TestLatencyFaultServesAfterTheClientLeft(t *testing.T) {
	const delay = 300 * time.Millisecond
	jitReq := &github.GenerateJITConfigRequest{Name: "late", RunnerGroupID: 1, Labels: []string{"e2e"}}
	for _, tc := range []struct {
		name, method, path string
		call               func(ctx context.Context, gh *github.Client, id int64) error
		done               func(s *Server) bool
	}{
		{"jit", "POST", "/repos/*/*/actions/runners/generate-jitconfig",
			func(ctx context.Context, gh *github.Client, _ int64) error {
				_, _, err := gh.Actions.GenerateRepoJITConfig(ctx, "acme", "api", jitReq)
				return err
			},
			func(s *Server) bool { return len(s.Registrations()) == 2 }},
		{"delete", "DELETE", "/repos/*/*/actions/runners/*",
			func(ctx context.Context, gh *github.Client, id int64) error {
				_, err := gh.Actions.RemoveRunner(ctx, "acme", "api", id)
				return err
			},
			func(s *Server) bool { return len(s.Runners()) == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, Options{})
			s.CreateRepo("acme", "api")
			gh := newClient(t, s, s.AddToken(TokenOptions{}))
			first, _, err := gh.Actions.GenerateRepoJITConfig(context.Background(), "acme", "api",
				&github.GenerateJITConfigRequest{Name: "first", RunnerGroupID: 1, Labels: []string{"e2e"}})
			if err != nil {
				t.Fatal(err)
			}
			s.AddFault(Fault{Method: tc.method, Path: tc.path, Kind: FaultLatency, Latency: delay, Count: 1})
			ctx, cancel := context.WithTimeout(context.Background(), delay/3)
			defer cancel()
			start := time.Now()
			if err := tc.call(ctx, gh, first.GetRunner().GetID()); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the client should have given up first: %v", err)
			}
			if tc.done(s) {
				t.Fatal("served before the delay ended")
			}
			if livetest.Poll(5*time.Second, 10*time.Millisecond, func() bool { return tc.done(s) }) != nil {
				t.Fatalf("not served after the delay: registrations %+v, runners %+v", s.Registrations(), s.Runners())
			}
			if took := time.Since(start); took < delay {
				t.Fatalf("served after %v, before the %v delay", took, delay)
			}
		})
	}
}
