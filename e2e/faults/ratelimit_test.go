//go:build e2e

package faults

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/status"
)

// startRecorded starts a simulator with repos, a recording proxy in front of it, and a daemon
// whose api_url is the proxy, with one repository target per repo (named after the repo's name).
func startRecorded(t *testing.T, repos ...string) (*harness.Sim, *Recorder, *harness.Config, *harness.Daemon) {
	t.Helper()
	sim := harness.StartSim(t, harness.SimOptions{Repos: repos})
	rec := StartRecorder(t, sim)
	cfg := harness.NewConfig(t, sim)
	cfg.File.GitHub.APIURL = rec.URL()
	for _, r := range repos {
		cfg.Add(harness.RepoTarget(repoName(r), r, e2eLabels, 2))
	}
	d := harness.StartDaemon(t, cfg.Write(t))
	return sim, rec, cfg, d
}

func repoName(full string) string {
	for i := range full {
		if full[i] == '/' {
			return full[i+1:]
		}
	}
	return full
}

// TestServerErrorStormBacksOffAndRecovers: while the runs endpoints answer 502, each pass makes at
// most one call's worth of attempts (1 + 4 retries); the loop then backs off (class retryable: 5 s,
// then 10 s, each ±10 %) without a single request until the backoff ends, status shows the backoff
// and when it ends, and once the storm stops the jobs queued during it all run.
func TestServerErrorStormBacksOffAndRecovers(t *testing.T) {
	t.Parallel()
	sim, rec, cfg, d := startRecorded(t, "acme/web")
	sim.WaitJobsDone(t, jobTimeout, sim.MustQueue(t, "acme/web", e2eLabels, 500*time.Millisecond))

	stormStart := time.Now()
	storm := sim.AddFault(ghsim.Fault{Path: "/repos/acme/web/actions/runs/**", Kind: ghsim.FaultStatus, Status: http.StatusBadGateway})
	jobs := queueAll(t, sim, "acme/web", 2, 500*time.Millisecond)

	// Two failed passes: the storm outlasts the first backoff and ends during the second. A pass
	// begins by listing the target's runners, so the proxy's log shows where each one starts.
	waitHits := func(n int) {
		harness.Eventually(t, 90*time.Second, strconv.Itoa(n)+" storm answers", func() bool { return sim.FaultHits(storm) >= n })
	}
	waitHits(5)
	ts := waitTarget(t, d, "web", 30*time.Second, "backing off after the first failed pass",
		func(ts status.Target) bool { return backingOff("retryable")(ts) && ts.LastError != "" })
	if observed := time.Now(); ts.Backoff.Until.Before(observed) {
		t.Errorf("status (read %s, during the backoff) says the backoff ended %s: backoff_until is not the time of the next try:\n%s",
			observed.Format("15:04:05.000"), ts.Backoff.Until.Format("15:04:05.000"), rec.Dump(stormStart))
	}
	// A pass no longer begins with a runner listing (it is read only when it can tell something),
	// so each backoff is checked against what status says of it: from the end of the failed
	// call to backoff_until, no request reaches the runs endpoints, and the wait is the class's.
	checkBackoff := func(n int, ts status.Target, observed time.Time, minGap time.Duration) {
		t.Helper()
		before := rec.Between(stormStart.Add(-time.Nanosecond), observed, "/actions/runs")
		if len(before) == 0 {
			t.Fatalf("backoff %d: no request to the runs endpoints before it:\n%s", n, rec.Dump(stormStart))
		}
		failedEnd := before[len(before)-1].End
		if gap := ts.Backoff.Until.Sub(failedEnd); gap < minGap {
			t.Errorf("backoff %d: the failed call ended %s and status says the next try is at %s (%s); the backoff is at least %s",
				n, failedEnd.Format("15:04:05.000"), ts.Backoff.Until.Format("15:04:05.000"), gap.Round(time.Millisecond), minGap)
		}
		harness.Eventually(t, 60*time.Second, "the backoff to end", func() bool { return time.Now().After(ts.Backoff.Until) })
		if early := rec.Between(failedEnd, ts.Backoff.Until.Add(-50*time.Millisecond), "/actions/runs"); len(early) > 0 {
			t.Errorf("backoff %d: %d requests reached the runs endpoints before backoff_until %s:\n%s",
				n, len(early), ts.Backoff.Until.Format("15:04:05.000"), rec.Dump(stormStart))
		}
		if calls := len(before); calls > 5*n {
			t.Errorf("after %d failed passes the runs endpoints had %d requests; one call is 1 + 4 retries:\n%s", n, calls, rec.Dump(stormStart))
		}
	}
	t.Logf("status during the backoff: %q until %s; last_error %q", ts.Backoff.Reason, ts.Backoff.Until.Format("15:04:05.000"), ts.LastError)
	checkBackoff(1, ts, time.Now(), 4500*time.Millisecond) // 5 s, less 10 % jitter
	first := ts.Backoff.Until
	ts = waitTarget(t, d, "web", 60*time.Second, "backing off after the second failed pass",
		func(ts status.Target) bool { return backingOff("retryable")(ts) && ts.Backoff.Until.After(first) })
	checkBackoff(2, ts, time.Now(), 9*time.Second) // 10 s, less 10 %
	sim.RemoveFault(storm)
	t.Logf("storm: %d requests to the runs endpoints", len(rec.Between(stormStart, time.Now(), "/actions/runs")))

	sim.WaitJobsDone(t, jobTimeout, jobs...)
	waitTarget(t, d, "web", 30*time.Second, "healthy again", healthy)
	stopClean(t, sim, d, drainBound(cfg))
}

// passStarts are the runner listings (the first call of every pass) that reached the proxy after t.
func passStarts(rec *Recorder, t time.Time) requests {
	var out requests
	for _, q := range rec.Requests("/actions/runners") {
		if q.Method == http.MethodGet && strings.HasSuffix(q.Path, "/actions/runners") && q.Start.After(t) {
			out = append(out, q)
		}
	}
	return out
}

// TestSecondaryLimitsHonourRetryAfter: a 429, then a 403 secondary limit, each with Retry-After,
// on the queued-runs endpoint. No request to that endpoint, and (docs/github.md: a secondary limit
// pauses every request) no request at all, reaches GitHub before Retry-After has elapsed; the job
// queued meanwhile runs afterwards.
func TestSecondaryLimitsHonourRetryAfter(t *testing.T) {
	t.Parallel()
	sim, rec, cfg, d := startRecorded(t, "acme/web")
	sim.WaitJobsDone(t, jobTimeout, sim.MustQueue(t, "acme/web", e2eLabels, 500*time.Millisecond))

	const retryAfter = 4 * time.Second
	for _, tc := range []struct {
		name string
		kind ghsim.FaultKind
		code int
	}{
		{"429", ghsim.FaultRateLimited, http.StatusTooManyRequests},
		{"403-secondary", ghsim.FaultSecondary, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			since := time.Now()
			fault := sim.AddFault(ghsim.Fault{Path: "/repos/acme/web/actions/runs", Kind: tc.kind, RetryAfter: retryAfter, Count: 1})
			job := sim.MustQueue(t, "acme/web", e2eLabels, 500*time.Millisecond)
			harness.Eventually(t, 30*time.Second, "the "+tc.name+" fault to fire", func() bool { return sim.FaultHits(fault) == 1 })
			// The simulator counts the hit before its answer has passed back through the proxy,
			// so the recorder may log it a moment later.
			var limited Request
			var ok bool
			harness.Eventually(t, 10*time.Second, "the proxy to record the "+tc.name+" answer", func() bool {
				limited, ok = rec.First(since, tc.code)
				return ok
			})
			if got := limited.Header.Get("Retry-After"); got != strconv.Itoa(int(retryAfter.Seconds())) {
				t.Fatalf("the %d answer carries Retry-After %q", tc.code, got)
			}
			sim.WaitJobsDone(t, jobTimeout, job)
			resume := limited.End.Add(retryAfter)
			if early := rec.Between(limited.End, resume, "/actions/runs"); len(early) > 0 {
				t.Errorf("the runs endpoint was called before Retry-After (%s) elapsed at %s:\n%s",
					retryAfter, resume.Format("15:04:05.000"), rec.Dump(since))
			}
			if early := rec.Between(limited.End, resume, ""); len(early) > 0 {
				t.Errorf("requests were sent during the secondary-limit pause ending %s (docs/github.md: it pauses every request):\n%s",
					resume.Format("15:04:05.000"), rec.Dump(since))
			}
			if started := sim.MustJob(t, job).StartedAt; started.Before(resume) {
				t.Errorf("job %d started at %s, before the pause ended at %s", job, started.Format("15:04:05.000"), resume.Format("15:04:05.000"))
			}
		})
	}
	stopClean(t, sim, d, drainBound(cfg))
}

// TestBudgetExhaustedWaitsForReset: GitHub answers 403 with x-ratelimit-remaining 0 and a reset a
// few seconds ahead. The daemon holds one credential, so both targets share the budget: no request
// of either reaches GitHub before x-ratelimit-reset, status shows the rate-limited backoff until
// then, and both resume by themselves after it.
//
// The fault, not ghsim's ExhaustBudget, makes the answer: ExhaustBudget spends the current hourly
// window, and on the real clock the daemon would wait up to an hour for its reset. With Count 1 a
// daemon that ignored the reset would get answers at once, which the proxy's log shows.
func TestBudgetExhaustedWaitsForReset(t *testing.T) {
	t.Parallel()
	sim, rec, cfg, d := startRecorded(t, "acme/web", "acme/api")
	sim.WaitJobsDone(t, jobTimeout, sim.MustQueue(t, "acme/web", e2eLabels, 500*time.Millisecond))

	const window = 8 * time.Second
	since := time.Now()
	fault := sim.AddFault(ghsim.Fault{Path: "/repos/acme/web/actions/runs", Kind: ghsim.FaultBudgetExhausted, RetryAfter: window, Count: 1})
	harness.Eventually(t, 30*time.Second, "the budget fault to fire", func() bool { return sim.FaultHits(fault) == 1 })
	// Queued only now: a pass of api that read its jobs before web's 403 arrived could start one.
	jobs := []int64{sim.MustQueue(t, "acme/web", e2eLabels, 500*time.Millisecond), sim.MustQueue(t, "acme/api", e2eLabels, 500*time.Millisecond)}
	limited, ok := rec.First(since, http.StatusForbidden)
	if !ok {
		t.Fatalf("the proxy saw no 403:\n%s", rec.Dump(since))
	}
	resetUnix, err := strconv.ParseInt(limited.Header.Get("X-Ratelimit-Reset"), 10, 64)
	if err != nil || limited.Header.Get("X-Ratelimit-Remaining") != "0" {
		t.Fatalf("the 403 is not a primary-limit answer (remaining %q, reset %q)", limited.Header.Get("X-Ratelimit-Remaining"), limited.Header.Get("X-Ratelimit-Reset"))
	}
	reset := time.Unix(resetUnix, 0)

	ts := waitTarget(t, d, "web", 10*time.Second, "backing off until the budget resets", backingOff("rate-limited"))
	if ts.Backoff.Until.Before(reset) {
		t.Errorf("status says the backoff ends %s, before x-ratelimit-reset %s", ts.Backoff.Until.Format(time.RFC3339Nano), reset.Format(time.RFC3339))
	}
	t.Logf("web while exhausted: backoff %q until %s; last_error %q", ts.Backoff.Reason, ts.Backoff.Until.Format("15:04:05.000"), ts.LastError)

	sim.WaitJobsDone(t, window+jobTimeout, jobs...)
	if early := rec.Between(limited.End, reset, ""); len(early) > 0 {
		t.Errorf("requests reached GitHub before x-ratelimit-reset %s:\n%s", reset.Format("15:04:05"), rec.Dump(since))
	}
	for _, id := range jobs {
		if started := sim.MustJob(t, id).StartedAt; started.Before(reset) {
			t.Errorf("job %d started at %s, before the budget reset at %s", id, started.Format("15:04:05.000"), reset.Format("15:04:05"))
		}
	}
	for _, name := range []string{"web", "api"} {
		waitTarget(t, d, name, 30*time.Second, "healthy after the reset", healthy)
	}
	stopClean(t, sim, d, drainBound(cfg))
}
