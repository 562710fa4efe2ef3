package ghsim

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

// do sends one authenticated REST request and returns the answer with its body read.
func rest(t *testing.T, s *Server, ctx context.Context, tok, method, path, etag, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, s.URL()+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ""
		}
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, sb.String()
}

func wantRefusal(t *testing.T, what string, resp *http.Response, body string, code, retry int) {
	t.Helper()
	if resp.StatusCode != code || resp.Header.Get("Retry-After") != strconv.Itoa(retry) || !strings.Contains(body, "secondary rate limit") {
		t.Fatalf("%s: %d retry-after=%q body=%s; want %d with retry-after %d", what, resp.StatusCode, resp.Header.Get("Retry-After"), body, code, retry)
	}
	if resp.Header.Get("X-Ratelimit-Remaining") == "0" {
		t.Fatalf("%s: a secondary limit must not claim the primary budget is spent", what)
	}
}

// TestLimitDefaultsAreGitHubs pins the defaults to the numbers of GitHub's published limits
// (testdata/rate-limits.md, with provenance in testdata/README.md).
func TestLimitDefaultsAreGitHubs(t *testing.T) {
	doc, err := os.ReadFile("testdata/rate-limits.md")
	if err != nil {
		t.Fatal(err)
	}
	num := func(re string) int {
		m := regexp.MustCompile(re).FindSubmatch(doc)
		if m == nil {
			t.Fatalf("testdata/rate-limits.md no longer says %s", re)
		}
		n, _ := strconv.Atoi(strings.ReplaceAll(string(m[1]), ",", ""))
		return n
	}
	var l Limits
	l.withDefaults()
	want := Limits{
		PointsPerMinute:      num(`\*\*([\d,]+) points per minute\*\* per single REST endpoint`),
		Concurrent:           num(`\*\*([\d,]+) concurrent requests\*\*`),
		ContentPerMinute:     num(`\*\*([\d,]+) content-generating requests per minute\*\*`),
		ContentPerHour:       num(`content-generating requests per minute\*\* and \*\*([\d,]+) per hour\*\*`),
		RegistrationsPerHour: 10000, // GitHub's own actions_runner_registration resource (issue 16); not in the notes
	}
	if l != want {
		t.Fatalf("defaults %+v, GitHub's %+v", l, want)
	}
	if pointCost(http.MethodGet) != 1 || pointCost(http.MethodHead) != 1 || pointCost(http.MethodPost) != 5 || pointCost(http.MethodDelete) != 5 {
		t.Fatal("point costs differ from GitHub's: GET/HEAD 1, POST/PATCH/PUT/DELETE 5")
	}
}

// TestPointsPerMinute: points are counted across every REST endpoint of the account, a 304 costs
// its point, a POST costs 5; the request over the limit gets 403 with the retry-after at which it
// would pass, is not charged, and passes then. Another account is not affected.
func TestPointsPerMinute(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	s := newTestServer(t, Options{Clock: clock, Limits: Limits{PointsPerMinute: 10}})
	s.CreateRepo("acme", "api")
	tok := s.AddToken(TokenOptions{Login: "ops"})
	other := s.AddToken(TokenOptions{Login: "dev"})
	ctx := context.Background()
	first, _ := rest(t, s, ctx, tok, "GET", "/repos/acme/api/actions/runs", "", "")
	etag := first.Header.Get("ETag")
	for i := range 3 { // 304s: free against the primary budget, 1 point each
		if r, _ := rest(t, s, ctx, tok, "GET", "/repos/acme/api/actions/runs", etag, ""); r.StatusCode != http.StatusNotModified {
			t.Fatalf("conditional %d: %d", i, r.StatusCode)
		}
	}
	clock.Advance(10 * time.Second)
	rest(t, s, ctx, tok, "GET", "/repos/acme/api/actions/runners", "", "")
	rest(t, s, ctx, tok, "DELETE", "/repos/acme/api/actions/runners/1", "", "") // 5 points: 10 in all
	r, body := rest(t, s, ctx, tok, "GET", "/rate_limit", "", "")
	wantRefusal(t, "11th point", r, body, http.StatusForbidden, 50) // the 4 points at t0 expire at t0+60s
	if _, used, _ := s.RateUsage(tok); used != 3 {
		t.Fatalf("primary used = %d, want 3 (two 200s and a 404; 304s and refusals are free)", used)
	}
	if r, _ := rest(t, s, ctx, other, "GET", "/repos/acme/api/actions/runs", "", ""); r.StatusCode != 200 {
		t.Fatalf("another account: %d", r.StatusCode)
	}
	clock.Advance(49 * time.Second)
	if r, _ := rest(t, s, ctx, tok, "GET", "/rate_limit", "", ""); r.StatusCode != http.StatusForbidden {
		t.Fatalf("a second early: %d", r.StatusCode)
	}
	clock.Advance(time.Second)
	for i := range 4 {
		if r, _ := rest(t, s, ctx, tok, "GET", "/rate_limit", "", ""); r.StatusCode != 200 {
			t.Fatalf("after the window moved, request %d: %d", i, r.StatusCode)
		}
	}
	if r, body := rest(t, s, ctx, tok, "POST", "/repos/acme/api/actions/runners/generate-jitconfig", "", "{}"); r.StatusCode != 403 || !strings.Contains(body, "secondary") {
		t.Fatalf("a 5-point POST with 0 points left: %d %s", r.StatusCode, body)
	}
	if got := s.LimitAnswers()[LimitPoints]; got != 3 {
		t.Fatalf("points refusals = %d, want 3", got)
	}
	if got := s.PeakPointsPerMinute(); got != 10 {
		t.Fatalf("peak = %d, want 10", got)
	}
}

// TestConcurrentRequests: the request beyond the account's in-flight limit gets 429 with
// retry-after; an injected round-trip latency keeps requests in flight, as a slow GitHub would.
func TestConcurrentRequests(t *testing.T) {
	s := newTestServer(t, Options{Limits: Limits{Concurrent: 2}})
	s.CreateRepo("acme", "api")
	tok := s.AddToken(TokenOptions{})
	s.SetLatency(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rest(t, s, ctx, tok, "GET", "/repos/acme/api/actions/runs", "", "")
		}()
	}
	livetest.Eventually(t, "two requests in flight", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.tokens[tok].bucket.sec.inFlight == 2
	})
	r, body := rest(t, s, context.Background(), tok, "GET", "/repos/acme/api/actions/runs", "", "")
	wantRefusal(t, "third in flight", r, body, http.StatusTooManyRequests, 60)
	cancel()
	wg.Wait()
	livetest.Eventually(t, "the two to end", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.tokens[tok].bucket.sec.inFlight == 0
	})
	s.SetLatency(0)
	if r, _ := rest(t, s, context.Background(), tok, "GET", "/repos/acme/api/actions/runs", "", ""); r.StatusCode != 200 {
		t.Fatalf("after they ended: %d", r.StatusCode)
	}
}

// TestContentCreation: mutative requests other than JIT registrations are content creation,
// limited per minute and per hour; JIT registrations count under actions_runner_registration.
func TestContentCreation(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	s := newTestServer(t, Options{Clock: clock, Limits: Limits{ContentPerMinute: 2, ContentPerHour: 3, RegistrationsPerHour: 2}})
	s.CreateRepo("acme", "api")
	tok := s.AddToken(TokenOptions{})
	ctx := context.Background()
	del := func() (*http.Response, string) {
		return rest(t, s, ctx, tok, "DELETE", "/repos/acme/api/actions/runners/1", "", "")
	}
	del()
	clock.Advance(20 * time.Second)
	del()
	r, body := del()
	wantRefusal(t, "third in a minute", r, body, http.StatusForbidden, 40)
	clock.Advance(40 * time.Second)
	if r, _ := del(); r.StatusCode != http.StatusNotFound {
		t.Fatalf("after a minute: %d", r.StatusCode)
	}
	clock.Advance(2 * time.Minute)
	r, body = del()
	wantRefusal(t, "fourth in an hour", r, body, http.StatusForbidden, 3600-180)

	_, coreBefore, _ := s.RateUsage(tok)
	jit := func(name string) (*http.Response, string) {
		return rest(t, s, ctx, tok, "POST", "/repos/acme/api/actions/runners/generate-jitconfig", "", `{"name":"`+name+`","labels":["x"]}`)
	}
	for i, name := range []string{"a", "b"} {
		r, _ := jit(name)
		if r.StatusCode != http.StatusCreated || r.Header.Get("X-Ratelimit-Resource") != "actions_runner_registration" ||
			r.Header.Get("X-Ratelimit-Limit") != "2" || r.Header.Get("X-Ratelimit-Remaining") != strconv.Itoa(1-i) {
			t.Fatalf("JIT %s (not content creation): %d %v", name, r.StatusCode, r.Header)
		}
	}
	r, body = jit("c")
	// A spent resource is answered as a primary limit: remaining 0 and the reset, no retry-after.
	reset := strconv.FormatInt(clock.Now().Add(time.Hour).Unix(), 10)
	if r.StatusCode != http.StatusForbidden || r.Header.Get("X-Ratelimit-Remaining") != "0" || r.Header.Get("X-Ratelimit-Reset") != reset ||
		r.Header.Get("X-Ratelimit-Resource") != "actions_runner_registration" || r.Header.Get("Retry-After") != "" {
		t.Fatalf("third JIT in an hour: %d %v %s", r.StatusCode, r.Header, body)
	}
	if _, used, _ := s.RateUsage(tok); used != coreBefore {
		t.Fatalf("core used = %d; JIT registrations count under their own resource", used)
	}
	answers := s.LimitAnswers()
	if answers[LimitContent] != 2 || answers[LimitRegistration] != 1 {
		t.Fatalf("answers = %v", answers)
	}
}

// TestGoGitHubReadsRefusalsAsSecondary: go-github, which the daemon uses, classifies the answers.
func TestGoGitHubReadsRefusalsAsSecondary(t *testing.T) {
	s := newTestServer(t, Options{Limits: Limits{PointsPerMinute: 1}})
	s.CreateRepo("acme", "api")
	gh := newClient(t, s, s.AddToken(TokenOptions{}))
	ctx := context.Background()
	if _, _, err := gh.Actions.ListRunners(ctx, "acme", "api", nil); err != nil {
		t.Fatal(err)
	}
	_, _, err := gh.Actions.ListRunners(ctx, "acme", "api", nil)
	var abuse *github.AbuseRateLimitError
	if !asErr(err, &abuse) || abuse.RetryAfter == nil || *abuse.RetryAfter <= 0 {
		t.Fatalf("err = %v, want an AbuseRateLimitError with RetryAfter", err)
	}
}

// TestRequestCounts: GET /_ghsim/admin/requests counts every API request by method and route
// pattern, refused and unauthenticated ones included.
func TestRequestCounts(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	tok := s.AddToken(TokenOptions{})
	ctx := context.Background()
	rest(t, s, ctx, tok, "GET", "/repos/acme/api/actions/runs?status=queued", "", "")
	rest(t, s, ctx, tok, "GET", "/repos/acme/api/actions/runs?status=in_progress", "", "")
	rest(t, s, ctx, "bad", "GET", "/repos/acme/api/actions/runners", "", "")
	rest(t, s, ctx, tok, "DELETE", "/orgs/acme/actions/runners/7", "", "")
	rest(t, s, ctx, tok, "GET", "/nowhere", "", "")
	var got map[string]int
	admin(t, s, "GET", "/requests", nil, &got)
	want := map[string]int{
		"GET /repos/{owner}/{repo}/actions/runs":    2,
		"GET /repos/{owner}/{repo}/actions/runners": 1,
		"DELETE /orgs/{org}/actions/runners/{id}":   1,
		"GET (unrouted)": 1,
	}
	if b, w := mustJSON(got), mustJSON(want); b != w {
		t.Fatalf("requests = %s, want %s", b, w)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestRepoForbidden: one repository answers 403 on every REST call; the others are untouched.
func TestRepoForbidden(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	s.CreateRepo("acme", "web")
	tok := s.AddToken(TokenOptions{})
	ctx := context.Background()
	if code := admin(t, s, "POST", "/repos/forbidden", map[string]any{"repo": "acme/api", "forbidden": true}, nil); code != http.StatusNoContent {
		t.Fatalf("admin: %d", code)
	}
	for _, p := range []string{"/repos/acme/api/actions/runs", "/repos/acme/api/actions/runners"} {
		if r, body := rest(t, s, ctx, tok, "GET", p, "", ""); r.StatusCode != http.StatusForbidden || !strings.Contains(body, "not accessible") {
			t.Fatalf("%s: %d %s", p, r.StatusCode, body)
		}
	}
	if r, _ := rest(t, s, ctx, tok, "GET", "/repos/acme/web/actions/runs", "", ""); r.StatusCode != 200 {
		t.Fatalf("other repository: %d", r.StatusCode)
	}
	_ = s.SetRepoForbidden("acme/api", false)
	if r, _ := rest(t, s, ctx, tok, "GET", "/repos/acme/api/actions/runs", "", ""); r.StatusCode != 200 {
		t.Fatalf("cleared: %d", r.StatusCode)
	}
}

// TestRunWithJobsQueuedAtDifferentTimes: a matrix leg and a needs job join a run after its first
// job started; the run stays in_progress (holding queued jobs) until every job completed, and each
// job can be listed on its own.
func TestRunWithJobsQueuedAtDifferentTimes(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	tok := s.AddToken(TokenOptions{})
	gh := newClient(t, s, tok)
	ctx := context.Background()
	runID, ids, err := s.QueueRun("acme/api", 2, JobSpec{Name: "build", Labels: []string{"linux"}})
	if err != nil || len(ids) != 1 {
		t.Fatal(ids, err)
	}
	status := func() string {
		runs, _, err := gh.Actions.ListRepositoryWorkflowRuns(ctx, "acme", "api", nil)
		if err != nil || len(runs.WorkflowRuns) != 1 || runs.WorkflowRuns[0].GetID() != runID {
			t.Fatalf("runs = %+v, %v", runs, err)
		}
		return runs.WorkflowRuns[0].GetStatus()
	}
	if st := status(); st != StatusQueued {
		t.Fatalf("new run: %s", st)
	}
	s.mu.Lock()
	s.jobs[ids[0]].status, s.jobs[ids[0]].startedAt = StatusInProgress, s.now()
	s.mu.Unlock()
	leg, err := s.QueueInRun(runID, JobSpec{Name: "build (arm64)", Labels: []string{"arm64"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.FinishJob(ids[0], "success", true)
	_ = s.FinishJob(leg, "success", true)
	if st := status(); st != StatusInProgress {
		t.Fatalf("all queued jobs done, one announced: %s", st)
	}
	deploy, err := s.QueueInRun(runID, JobSpec{Name: "deploy", Labels: []string{"linux"}})
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, err := gh.Actions.ListWorkflowJobs(ctx, "acme", "api", runID, nil)
	if err != nil || jobs.GetTotalCount() != 3 || jobs.Jobs[2].GetStatus() != StatusQueued || jobs.Jobs[2].GetName() != "deploy" {
		t.Fatalf("jobs = %+v, %v", jobs, err)
	}
	if st := status(); st != StatusInProgress {
		t.Fatalf("with a queued needs job: %s", st)
	}
	if _, err := s.QueueInRun(runID, JobSpec{}); err == nil {
		t.Fatal("a job beyond those announced was accepted")
	}
	_ = s.FinishJob(deploy, "success", true)
	if st := status(); st != StatusCompleted {
		t.Fatalf("every job done: %s", st)
	}
}

// TestJobStepsChangeWhileRunning: the jobs body (and so its ETag) changes as a running job moves
// through its steps, so a conditional poll of an in_progress run is not free.
func TestJobStepsChangeWhileRunning(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	s := newTestServer(t, Options{Clock: clock})
	s.CreateRepo("acme", "api")
	tok := s.AddToken(TokenOptions{})
	ctx := context.Background()
	id, _ := s.QueueJob("acme/api", []string{"linux"}, 12*time.Second)
	j, _ := s.Job(id)
	path := "/repos/acme/api/actions/runs/" + strconv.FormatInt(j.RunID, 10) + "/jobs"
	steps := func() []*github.TaskStep {
		r, body := rest(t, s, ctx, tok, "GET", path, "", "")
		var jobs github.Jobs
		if r.StatusCode != 200 || json.Unmarshal([]byte(body), &jobs) != nil {
			t.Fatalf("jobs: %d %s", r.StatusCode, body)
		}
		return jobs.Jobs[0].Steps
	}
	if n := len(steps()); n != 0 {
		t.Fatalf("queued job has %d steps", n)
	}
	s.mu.Lock()
	s.jobs[id].status, s.jobs[id].startedAt = StatusInProgress, clock.Now()
	s.mu.Unlock()
	etag := ""
	var seen []string
	for range 4 {
		r, _ := rest(t, s, ctx, tok, "GET", path, etag, "")
		if r.StatusCode != 200 {
			t.Fatalf("at %s the running job's body did not change (%d)", clock.Now().Format(time.TimeOnly), r.StatusCode)
		}
		etag = r.Header.Get("ETag")
		st := steps()
		last := st[len(st)-1]
		seen = append(seen, last.GetName()+":"+last.GetStatus())
		clock.Advance(stepLen)
	}
	want := "Set up job:in_progress Run step 1:in_progress Run step 2:in_progress Run step 3:in_progress"
	if got := strings.Join(seen, " "); got != want {
		t.Fatalf("steps seen %q, want %q", got, want)
	}
	_ = s.FinishJob(id, "success", true)
	st := steps()
	if last := st[len(st)-1]; last.GetName() != "Complete job" || last.GetStatus() != StatusCompleted || len(st) != 5 {
		t.Fatalf("completed job's steps end with %s:%s (%d steps)", last.GetName(), last.GetStatus(), len(st))
	}
	for _, x := range st {
		if x.GetStatus() != StatusCompleted {
			t.Fatalf("step %s of a completed job is %s", x.GetName(), x.GetStatus())
		}
	}
}
