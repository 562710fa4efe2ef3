package github

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

const runsPath = "/repos/acme/api/actions/runs"

func TestServerErrorsAreRetriedWithBackoff(t *testing.T) {
	for _, kind := range []ghsim.Fault{
		{Path: runsPath, Kind: ghsim.FaultStatus, Status: 502, Count: 3},
		{Path: runsPath, Kind: ghsim.FaultConnectionReset, Count: 3},
	} {
		t.Run(string(kind.Kind), func(t *testing.T) {
			s := newSim(t)
			c, _ := s.tokenClient(s.token)
			id := s.srv.AddFault(kind)
			if _, err := c.QueuedJobs(context.Background(), repoScope, nil); err != nil {
				t.Fatalf("after 3 transient failures: %v", err)
			}
			if s.srv.FaultHits(id) != 3 {
				t.Fatalf("fault fired %d times", s.srv.FaultHits(id))
			}
			sl := s.Sleeps()
			if len(sl) != 3 {
				t.Fatalf("sleeps %v, want 3 backoffs", sl)
			}
			for i, d := range sl { // 1 s, 2 s, 4 s, each ±20 %
				base := time.Second << i
				if d < base*8/10 || d > base*12/10 {
					t.Fatalf("backoff %d = %v, want %v ±20%%", i, d, base)
				}
			}
		})
	}
}

func TestServerErrorsGiveUpBounded(t *testing.T) {
	s := newSim(t)
	c, _ := s.tokenClient(s.token)
	s.srv.AddFault(ghsim.Fault{Path: runsPath, Kind: ghsim.FaultStatus, Status: 503})
	_, err := c.QueuedJobs(context.Background(), repoScope, nil)
	var e *Error
	if !errors.As(err, &e) || !e.Retryable || e.Status != 503 || !IsRetryable(err) || IsTerminal(err) {
		t.Fatalf("err = %#v", err)
	}
	if len(s.Sleeps()) != 4 {
		t.Fatalf("%d retries, want 4", len(s.Sleeps()))
	}
	if !strings.HasPrefix(err.Error(), "target acme/api: cannot list workflow runs: GitHub refused (503)") {
		t.Fatalf("message %q", err)
	}
}

func TestSecondaryLimitWaitsExactly(t *testing.T) {
	for _, kind := range []ghsim.FaultKind{ghsim.FaultRateLimited, ghsim.FaultSecondary} {
		t.Run(string(kind), func(t *testing.T) {
			s := newSim(t)
			o := s.options()
			o.MaxRateWait = 5 * time.Minute
			c := s.clientWith(o)
			s.srv.AddFault(ghsim.Fault{Path: runsPath, Kind: kind, RetryAfter: 37 * time.Second, Count: 1})
			if _, err := c.QueuedJobs(context.Background(), repoScope, nil); err != nil {
				t.Fatal(err)
			}
			if sl := s.Sleeps(); len(sl) != 1 || sl[0] != 37*time.Second {
				t.Fatalf("sleeps %v, want exactly [37s]", sl)
			}
		})
	}
}

func TestSecondaryLimitFailsFastAndSendsNothingBeforeRetryAfter(t *testing.T) {
	s := newSim(t)
	c, _ := s.tokenClient(s.token)
	s.srv.AddFault(ghsim.Fault{Path: runsPath, Kind: ghsim.FaultRateLimited, RetryAfter: 90 * time.Second, Count: 1})
	start := s.clock.Now()
	_, err := c.QueuedJobs(context.Background(), repoScope, nil)
	var rl *RateLimitedError
	if !errors.As(err, &rl) || !rl.Secondary || !rl.RetryAfter().Equal(start.Add(90*time.Second)) || !IsRetryable(err) {
		t.Fatalf("err = %v", err)
	}
	sent := len(s.Requests())
	s.clock.Advance(89 * time.Second)
	if _, err := c.ListRunners(context.Background(), repoScope); !errors.As(err, &rl) {
		t.Fatalf("before retry-after: %v", err)
	}
	if len(s.Requests()) != sent {
		t.Fatal("a request was sent before retry-after")
	}
	s.clock.Advance(time.Second)
	if _, err := c.QueuedJobs(context.Background(), repoScope, nil); err != nil {
		t.Fatalf("at retry-after: %v", err)
	}
}

func TestBudgetExhaustionHonoursReset(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault *ghsim.Fault
	}{
		{"simulated budget", nil},
		{"403 fault", &ghsim.Fault{Path: runsPath, Kind: ghsim.FaultBudgetExhausted, RetryAfter: 10 * time.Minute, Count: 1}},
		{"429 fault", &ghsim.Fault{Path: runsPath, Kind: ghsim.FaultBudgetExhausted, Status: 429, RetryAfter: 10 * time.Minute, Count: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			c, _ := s.tokenClient(s.token)
			ctx := context.Background()
			var reset time.Time
			if tc.fault == nil {
				s.srv.ExhaustBudget(s.token)
				_, _, reset = s.srv.RateUsage(s.token)
			} else {
				s.srv.AddFault(*tc.fault)
				reset = s.clock.Now().Add(10 * time.Minute)
			}
			_, err := c.QueuedJobs(ctx, repoScope, nil)
			var rl *RateLimitedError
			if !errors.As(err, &rl) || rl.Secondary || !rl.Until.Equal(reset) || rl.Resource != "core" {
				t.Fatalf("err = %v, want rate limited until %v", err, reset)
			}
			if !strings.Contains(err.Error(), "target acme/api: cannot list workflow runs: the GitHub API rate limit (core) is exhausted until") {
				t.Fatalf("message %q", err)
			}
			sent := len(s.Requests())
			s.clock.Set(reset.Add(-time.Second))
			if _, err := c.ListRunners(ctx, repoScope); !errors.As(err, &rl) || len(s.Requests()) != sent {
				t.Fatalf("a request was sent before the reset (%v)", err)
			}
			s.clock.Set(reset)
			if _, err := c.QueuedJobs(ctx, repoScope, nil); err != nil {
				t.Fatalf("after the reset: %v", err)
			}
		})
	}
}

func TestBudgetExhaustionWaitsWhenAllowed(t *testing.T) {
	s := newSim(t)
	o := s.options()
	o.MaxRateWait = time.Hour
	c := s.clientWith(o)
	s.srv.ExhaustBudget(s.token)
	_, _, reset := s.srv.RateUsage(s.token)
	if _, err := c.QueuedJobs(context.Background(), repoScope, nil); err != nil {
		t.Fatal(err)
	}
	if sl := s.Sleeps(); len(sl) != 1 || !simStart.Add(sl[0]).Equal(reset) {
		t.Fatalf("sleeps %v, want one wait until %v", sl, reset)
	}
}

func TestRevokedTokenIsUnauthorizedAfterOneReread(t *testing.T) {
	s := newSim(t)
	c, path := s.tokenClient(s.token)
	ctx := context.Background()
	s.srv.RevokeToken(s.token)
	_, err := c.QueuedJobs(ctx, repoScope, nil)
	var ue *UnauthorizedError
	if !errors.As(err, &ue) || !ue.Unauthorized() || !IsUnauthorized(err) || !IsTerminal(err) {
		t.Fatalf("err = %v", err)
	}
	want := "target acme/api: cannot list workflow runs: GitHub rejected the token in " + path + " (401)"
	if !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("message %q, want prefix %q", err, want)
	}
	if n := countStatus(s.Requests(), 401); n != 1 {
		t.Fatalf("%d requests got 401, want 1 (an unchanged credential is not sent again)", n)
	}
	// The operator rotates the token file; the next call uses it, no restart.
	fresh := s.srv.AddToken(ghsim.TokenOptions{Login: "octocat"})
	if err := writeFile(path, fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := c.QueuedJobs(ctx, repoScope, nil); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
}

// A 401 makes the client re-read the credential even when the file looks unchanged (same size
// and mtime, as after a same-length rewrite within the mtime granularity), and resend once.
func TestUnauthorizedRereadsCredentialAndResends(t *testing.T) {
	s := newSim(t)
	c, path := s.tokenClient(s.token)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	s.srv.RevokeToken(s.token)
	fresh := s.srv.AddToken(ghsim.TokenOptions{Login: "octocat"})
	if len(fresh) != len(s.token) {
		t.Fatalf("token lengths differ: %d %d", len(fresh), len(s.token))
	}
	if err := writeFile(path, fresh); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.QueuedJobs(context.Background(), repoScope, nil); err != nil {
		t.Fatal(err)
	}
	if n := countStatus(s.Requests(), 401); n != 1 {
		t.Fatalf("%d requests got 401, want 1", n)
	}
}

func TestPermissionRefusalHasRemedy(t *testing.T) {
	s := newSim(t)
	c, _ := s.tokenClient(s.srv.AddToken(ghsim.TokenOptions{Login: "octocat", NoAdmin: true}))
	_, err := c.GenerateJITConfig(context.Background(), repoScope, "runner-manager-1", []string{"linux"}, 0, "")
	want := "target acme/api: cannot register a runner: GitHub refused (403): the token lacks the `repo` scope (classic token) or the `Administration: read and write` permission (fine-grained token) on acme/api"
	if err == nil || err.Error() != want || !IsTerminal(err) || IsRetryable(err) {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if len(s.Sleeps()) != 0 {
		t.Fatal("a permission refusal was retried")
	}
}

func TestCallsStopAtCancel(t *testing.T) {
	s := newSim(t)
	c, _ := s.tokenClient(s.token)
	s.srv.AddFault(ghsim.Fault{Path: runsPath, Kind: ghsim.FaultLatency, Latency: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.QueuedJobs(ctx, repoScope, nil)
	if !errors.Is(err, context.DeadlineExceeded) || IsTerminal(err) {
		t.Fatalf("err = %v", err)
	}
}

func TestObserverAndContact(t *testing.T) {
	s := newSim(t)
	c, _ := s.tokenClient(s.token)
	s.srv.AddFault(ghsim.Fault{Path: runsPath, Kind: ghsim.FaultStatus, Status: 500, Count: 1})
	if _, err := c.ListRunners(context.Background(), repoScope); err != nil {
		t.Fatal(err)
	}
	if _, err := c.QueuedJobs(context.Background(), repoScope, nil); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	want := []RequestInfo{
		{Endpoint: "GET /repos/{owner}/{repo}/actions/runners", Status: 200},
		{Endpoint: "GET /repos/{owner}/{repo}/actions/runs", Status: 500},
		{Endpoint: "GET /repos/{owner}/{repo}/actions/runs", Status: 200},
		{Endpoint: "GET /repos/{owner}/{repo}/actions/runs", Status: 200},
	}
	if len(reqs) != len(want) {
		t.Fatalf("requests %+v", reqs)
	}
	for i := range want {
		if reqs[i].Endpoint != want[i].Endpoint || reqs[i].Status != want[i].Status {
			t.Fatalf("request %d = %+v, want %+v", i, reqs[i], want[i])
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.contacts) != 3 {
		t.Fatalf("contacts %v, want 3 (not the 500)", s.contacts)
	}
}

func countStatus(reqs []RequestInfo, status int) int {
	n := 0
	for _, r := range reqs {
		if r.Status == status {
			n++
		}
	}
	return n
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	s := newSim(t)
	o := s.options()
	// 1 s, not less: on a loaded machine a shorter deadline can pass before the simulator's
	// handler has even run, so the attempt would not be counted as a hit.
	o.RequestTimeout, o.MaxRetries = time.Second, 1
	c := s.clientWith(o)
	id := s.srv.AddFault(ghsim.Fault{Path: runsPath, Kind: ghsim.FaultLatency, Latency: time.Minute})
	_, err := c.QueuedJobs(context.Background(), repoScope, nil)
	if !IsRetryable(err) || !strings.Contains(err.Error(), "GitHub did not answer within 1s") || s.srv.FaultHits(id) != 2 {
		t.Fatalf("err = %v after %d attempts", err, s.srv.FaultHits(id))
	}
}

func TestRateLimitWaitsAreBounded(t *testing.T) {
	s := newSim(t)
	o := s.options()
	o.MaxRateWait = time.Hour
	c := s.clientWith(o)
	s.srv.AddFault(ghsim.Fault{Path: runsPath, Kind: ghsim.FaultRateLimited, RetryAfter: time.Minute})
	_, err := c.QueuedJobs(context.Background(), repoScope, nil)
	var rl *RateLimitedError
	if !errors.As(err, &rl) || len(s.Sleeps()) != maxRateWaits {
		t.Fatalf("err = %v after %d waits", err, len(s.Sleeps()))
	}
}

func TestNotFoundSaysWhy(t *testing.T) {
	s := newSim(t)
	c, path := s.tokenClient(s.token)
	_, err := c.ListRunners(context.Background(), Scope{Owner: "acme", Repo: "nope"})
	want := "target acme/nope: cannot list runners: GitHub refused (404): Not Found (acme/nope does not exist, or the token in " + path + " cannot see it)"
	if err == nil || err.Error() != want || !IsTerminal(err) {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// A call given up while it waits for the request governor, before any attempt left this host, is
// ErrNotSent (the engine then needs no lookup of a registration); one cut after an attempt was
// sent is not, since GitHub may have acted on it.
func TestNotSentOnlyBeforeAnyAttempt(t *testing.T) {
	s := newSim(t)
	c, _ := s.tokenClient(s.token)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.GenerateJITConfig(gone, repoScope, "runner-manager-1", []string{"linux"}, 0, "")
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cut in the governor: %v, want ErrNotSent", err)
	}
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d requests reached GitHub, want none", n)
	}
	s.srv.AddFault(ghsim.Fault{Path: runsPath, Kind: ghsim.FaultLatency, Latency: time.Minute})
	ctx, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stop()
	if _, err := c.QueuedJobs(ctx, repoScope, nil); err == nil || errors.Is(err, ErrNotSent) {
		t.Fatalf("cut while GitHub answered: %v, want an error that is not ErrNotSent", err)
	}
}
