package ghsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

func statusOf(err error) int {
	var ge *github.ErrorResponse
	if errors.As(err, &ge) {
		return ge.Response.StatusCode
	}
	return 0
}

func jitReq(name string, labels ...string) *github.GenerateJITConfigRequest {
	return &github.GenerateJITConfigRequest{Name: name, RunnerGroupID: 1, Labels: labels}
}

func TestLabelsSatisfy(t *testing.T) {
	for _, tc := range []struct {
		job, runner []string
		want        bool
	}{
		{[]string{"self-hosted", "linux"}, []string{"Linux"}, true},
		{[]string{"SELF-HOSTED"}, nil, true},
		{[]string{"linux", "gpu"}, []string{"linux"}, false},
		{nil, []string{"linux"}, true},
		{[]string{"X64"}, []string{"x64", "linux"}, true},
	} {
		if got := labelsSatisfy(tc.job, tc.runner); got != tc.want {
			t.Errorf("labelsSatisfy(%v, %v) = %v, want %v", tc.job, tc.runner, got, tc.want)
		}
	}
}

func TestRunnerEndpointErrors(t *testing.T) {
	ctx := context.Background()
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	s.CreateRepo("other", "secret")
	gh := newClient(t, s, s.AddToken(TokenOptions{Repos: []string{"acme/api"}}))

	jit, _, err := gh.Actions.GenerateRepoJITConfig(ctx, "acme", "api", jitReq("r1", "linux"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = gh.Actions.GenerateRepoJITConfig(ctx, "acme", "api", jitReq("R1", "linux"))
	if statusOf(err) != http.StatusConflict {
		t.Errorf("duplicate name: %v, want 409", err)
	}
	_, _, err = gh.Actions.GenerateRepoJITConfig(ctx, "acme", "api", jitReq("r2"))
	if statusOf(err) != http.StatusUnprocessableEntity {
		t.Errorf("no labels: %v, want 422", err)
	}
	_, _, err = gh.Actions.GenerateRepoJITConfig(ctx, "acme", "api", &github.GenerateJITConfigRequest{Name: "r3", RunnerGroupID: 999, Labels: []string{"x"}})
	if statusOf(err) != http.StatusNotFound {
		t.Errorf("unknown runner group: %v, want 404", err)
	}
	for _, repo := range []string{"nope", "secret"} {
		owner := map[string]string{"nope": "acme", "secret": "other"}[repo]
		if _, _, err := gh.Actions.ListRunners(ctx, owner, repo, nil); statusOf(err) != http.StatusNotFound {
			t.Errorf("list runners of %s/%s: %v, want 404", owner, repo, err)
		}
	}
	if _, err := gh.Actions.RemoveRunner(ctx, "acme", "api", 424242); statusOf(err) != http.StatusNotFound {
		t.Errorf("delete unknown runner: %v, want 404", err)
	}
	// A JIT runner that never comes online stays listed offline until deleted.
	r, _, err := gh.Actions.GetRunner(ctx, "acme", "api", jit.Runner.GetID())
	if err != nil || r.GetStatus() != RunnerOffline || r.GetBusy() {
		t.Fatalf("never-online runner = %+v, %v", r, err)
	}
	resp, err := gh.Actions.RemoveRunner(ctx, "acme", "api", jit.Runner.GetID())
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete idle runner: %v", err)
	}
	if regs := s.Registrations(); regs[0].RemovedBy != "delete" || regs[0].Online {
		t.Errorf("registration after delete = %+v", regs[0])
	}

	noAdmin := newClient(t, s, s.AddToken(TokenOptions{NoAdmin: true}))
	if _, _, err := noAdmin.Actions.ListRunners(ctx, "acme", "api", nil); statusOf(err) != http.StatusForbidden {
		t.Errorf("runner list without admin: %v, want 403", err)
	}
}

func TestBadCredentialsBody(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	req, _ := http.NewRequest(http.MethodGet, s.URL()+"/repos/acme/api/actions/runs", nil)
	req.Header.Set("Authorization", "token ghp_not_a_real_token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusUnauthorized || body["message"] != "Bad credentials" || body["documentation_url"] == "" {
		t.Fatalf("bad token: %d %v", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Ratelimit-Limit") == "" {
		t.Error("401 without x-ratelimit-limit")
	}
}

func TestRunnerPagination(t *testing.T) {
	ctx := context.Background()
	s := newTestServer(t, Options{})
	s.CreateOrg("acme")
	gh := newClient(t, s, s.AddToken(TokenOptions{}))
	for i := range 25 {
		if _, _, err := gh.Actions.GenerateOrgJITConfig(ctx, "acme", jitReq(fmt.Sprintf("r%02d", i), "linux")); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	opts := &github.ListRunnersOptions{ListOptions: github.ListOptions{PerPage: 10}}
	pages := 0
	for {
		rs, resp, err := gh.Actions.ListOrganizationRunners(ctx, "acme", opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if rs.TotalCount != 25 {
			t.Fatalf("total_count = %d", rs.TotalCount)
		}
		for _, r := range rs.Runners {
			names = append(names, r.GetName())
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if pages != 3 || len(names) != 25 || names[0] != "r00" || names[24] != "r24" {
		t.Fatalf("pages=%d names=%v", pages, names)
	}
	byName, _, err := gh.Actions.ListOrganizationRunners(ctx, "acme", &github.ListRunnersOptions{Name: github.String("r07")})
	if err != nil || byName.TotalCount != 1 {
		t.Fatalf("name filter: %+v %v", byName, err)
	}
}

// TestBusyRunnerAndFinishJob: an org runner takes a repo job, cannot be deleted while busy (422),
// and FinishJob stops a job that runs "until told".
func TestBusyRunnerAndFinishJob(t *testing.T) {
	ctx := context.Background()
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	gh := newClient(t, s, s.AddToken(TokenOptions{}))
	s.ServeRunnerPackage(testPackage(t))
	other, _ := s.QueueJob("acme/api", []string{"windows"}, 0)
	jobID, _ := s.QueueJob("acme/api", []string{"linux"}, -1)
	jit, _, err := gh.Actions.GenerateOrgJITConfig(ctx, "acme", jitReq("busy-1", "linux"))
	if err != nil {
		t.Fatal(err)
	}
	p := startRunner(t, extract(t, testPackage(t).Path), "", "--jitconfig", jit.GetEncodedJITConfig())
	livetest.Eventually(t, "the runner to take the job", func() bool { j, _ := s.Job(jobID); return j.Status == StatusInProgress || p.exited() })
	if p.exited() {
		t.Fatalf("runner exited early: %s", p.out.String())
	}
	r, _, err := gh.Actions.GetOrganizationRunner(ctx, "acme", jit.Runner.GetID())
	if err != nil || !r.GetBusy() || r.GetStatus() != RunnerOnline {
		t.Fatalf("runner during job = %+v, %v", r, err)
	}
	if _, err := gh.Actions.RemoveOrganizationRunner(ctx, "acme", jit.Runner.GetID()); statusOf(err) != http.StatusUnprocessableEntity {
		t.Fatalf("delete busy runner: %v, want 422", err)
	}
	if err := s.FinishJob(jobID, "cancelled", false); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, p.out.String())
	}
	if j, _ := s.Job(jobID); j.Conclusion != "cancelled" || j.RunnerName != "busy-1" {
		t.Fatalf("job = %+v", j)
	}
	if j, _ := s.Job(other); j.Status != StatusQueued {
		t.Fatalf("windows job was taken by a linux runner: %+v", j)
	}
	if len(s.Runners()) != 0 {
		t.Fatalf("ephemeral runner still listed: %+v", s.Runners())
	}
}

// TestFakeRunnerFaultsAndSignals covers the fake runner's faults and its SIGTERM behaviour.
func TestFakeRunnerFaultsAndSignals(t *testing.T) {
	pkg := testPackage(t)
	type step func(t *testing.T, s *Server, p *proc, jobID int64)
	sigterm := func(t *testing.T, p *proc) { t.Helper(); _ = p.cmd.Process.Signal(sigTERM) }
	online := func(s *Server, name string) func() bool {
		return func() bool {
			for _, r := range s.Runners() {
				if r.Name == name && r.Status == RunnerOnline {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name, runnerFault, jobFault string
		duration                    time.Duration
		check                       step
	}{
		{name: "sigterm-idle-exits-0", check: func(t *testing.T, s *Server, p *proc, _ int64) {
			livetest.Eventually(t, "online", online(s, "sigterm-idle-exits-0"))
			sigterm(t, p)
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit %d", code)
			}
			if r := s.Runners(); len(r) != 1 || r[0].Status != RunnerOffline {
				t.Fatalf("after idle exit runners = %+v", r)
			}
		}},
		{name: "ignore-sigterm-idle", runnerFault: runnerproto.FaultIgnoreSIGTERM, check: func(t *testing.T, s *Server, p *proc, _ int64) {
			livetest.Eventually(t, "online", online(s, "ignore-sigterm-idle"))
			sigterm(t, p)
			// Still alive after SIGTERM: it takes a job queued afterwards and exits only then.
			jobID, _ := s.QueueJob("acme/api", []string{"linux"}, 0)
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit %d: %s", code, p.out.String())
			}
			if j, _ := s.Job(jobID); j.Conclusion != "success" {
				t.Fatalf("job = %+v", j)
			}
		}},
		{name: "sigterm-busy-finishes", duration: 500 * time.Millisecond, check: func(t *testing.T, s *Server, p *proc, jobID int64) {
			livetest.Eventually(t, "busy", func() bool { j, _ := s.Job(jobID); return j.Status == StatusInProgress })
			sigterm(t, p)
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit %d", code)
			}
			if j, _ := s.Job(jobID); j.Conclusion != "success" {
				t.Fatalf("job = %+v", j)
			}
		}},
		{name: "exit-at-start", runnerFault: runnerproto.FaultExitAtStart, check: func(t *testing.T, s *Server, p *proc, jobID int64) {
			if code := p.wait(t); code != 1 {
				t.Fatalf("exit %d", code)
			}
			if j, _ := s.Job(jobID); j.Status != StatusQueued {
				t.Fatalf("job = %+v", j)
			}
		}},
		{name: "crash-mid-job", jobFault: runnerproto.FaultCrashMidJob, duration: 200 * time.Millisecond, check: func(t *testing.T, s *Server, p *proc, jobID int64) {
			if code := p.wait(t); code != 1 {
				t.Fatalf("exit %d", code)
			}
			if j, _ := s.Job(jobID); j.Status != StatusInProgress {
				t.Fatalf("job after crash = %+v", j)
			}
			_ = s.FinishJob(jobID, "failure", true) // GitHub gives up on the lost runner
			if j, _ := s.Job(jobID); j.Conclusion != "failure" || len(s.Runners()) != 0 {
				t.Fatalf("after FinishJob: %+v %+v", j, s.Runners())
			}
		}},
		{name: "hang", jobFault: runnerproto.FaultHang, duration: 50 * time.Millisecond, check: func(t *testing.T, s *Server, p *proc, jobID int64) {
			livetest.Eventually(t, "busy", func() bool { j, _ := s.Job(jobID); return j.Status == StatusInProgress })
			sigterm(t, p)
			_ = s.FinishJob(jobID, "cancelled", false) // a live runner would report back at once
			time.Sleep(300 * time.Millisecond)         // proving an absence: a hung runner neither exits nor reports
			if p.exited() {
				t.Fatal("hung runner exited")
			}
			if j, _ := s.Job(jobID); j.Status != StatusInProgress {
				t.Fatalf("hung job = %+v", j)
			}
		}},
		{name: "linger-after-job", jobFault: runnerproto.FaultLingerAfterJob, duration: 50 * time.Millisecond, check: func(t *testing.T, s *Server, p *proc, jobID int64) {
			livetest.Eventually(t, "completed", func() bool { j, _ := s.Job(jobID); return j.Status == StatusCompleted })
			if len(s.Runners()) != 0 {
				t.Fatalf("the ephemeral registration outlived its job: %+v", s.Runners())
			}
			time.Sleep(300 * time.Millisecond) // proving an absence: a lingering runner does not exit
			if p.exited() {
				t.Fatal("the lingering runner exited after its job")
			}
			sigterm(t, p)
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit %d after SIGTERM", code)
			}
		}},
		{name: "registration-removed-mid-job", duration: -1, check: func(t *testing.T, s *Server, p *proc, jobID int64) {
			livetest.Eventually(t, "busy", func() bool { j, _ := s.Job(jobID); return j.Status == StatusInProgress })
			if err := s.RemoveRunner("registration-removed-mid-job"); err != nil {
				t.Fatal(err)
			}
			if len(s.Runners()) != 0 {
				t.Fatalf("still listed: %+v", s.Runners())
			}
			if regs := s.Registrations(); len(regs) != 1 || regs[0].RemovedBy != "admin" {
				t.Fatalf("registrations = %+v", regs)
			}
			time.Sleep(300 * time.Millisecond) // proving an absence: the runner plays on
			if p.exited() {
				t.Fatal("the runner exited when its registration was removed mid-job")
			}
			if err := s.RemoveRunner("registration-removed-mid-job"); err == nil {
				t.Fatal("a second removal of the same runner succeeded")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newTestServer(t, Options{})
			s.CreateRepo("acme", "api")
			gh := newClient(t, s, s.AddToken(TokenOptions{}))
			s.SetRunnerFault(tc.name, tc.runnerFault)
			var jobID int64
			if !strings.HasPrefix(tc.name, "sigterm-idle") && !strings.HasPrefix(tc.name, "ignore") {
				jobID, _ = s.QueueJobSpec(JobSpec{Repo: "acme/api", Labels: []string{"linux"}, Duration: tc.duration, Fault: tc.jobFault})
			}
			jit, _, err := gh.Actions.GenerateRepoJITConfig(context.Background(), "acme", "api", jitReq(tc.name, "linux"))
			if err != nil {
				t.Fatal(err)
			}
			p := startRunner(t, extract(t, pkg.Path), jit.GetEncodedJITConfig())
			tc.check(t, s, p, jobID)
		})
	}
}

// TestSilentRunnerGoesOffline: a runner that stops calling in (killed without a goodbye) is listed
// offline after the heartbeat window, and online again when it calls.
func TestSilentRunnerGoesOffline(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	s := newTestServer(t, Options{Clock: clock})
	s.CreateRepo("acme", "api")
	gh := newClient(t, s, s.AddToken(TokenOptions{}))
	s.QueueJob("acme/api", []string{"linux"}, -1)
	jit, _, err := gh.Actions.GenerateRepoJITConfig(context.Background(), "acme", "api", jitReq("quiet", "linux"))
	if err != nil {
		t.Fatal(err)
	}
	playRunner(t, s, jit.GetEncodedJITConfig(), false)
	status := func() string {
		r, _, err := gh.Actions.GetRunner(context.Background(), "acme", "api", jit.Runner.GetID())
		if err != nil {
			t.Fatal(err)
		}
		return r.GetStatus()
	}
	if st := status(); st != RunnerOnline {
		t.Fatalf("status = %s", st)
	}
	clock.Advance(runnerHeartbeat)
	if st := status(); st != RunnerOffline {
		t.Fatalf("status after a silent minute = %s", st)
	}
	if r := s.Runners(); r[0].Status != RunnerOffline || !r[0].Busy {
		t.Fatalf("snapshot = %+v", r[0])
	}
}

// TestNeverOnlineForEveryRunner: the fault named "*" applies to every runner registered from then
// on; never_online reaches the runner in its JIT config (it never reads a connect reply), so the
// process runs, stays listed offline, takes no job, and exits on SIGTERM. "" clears it.
func TestNeverOnlineForEveryRunner(t *testing.T) {
	pkg := testPackage(t)
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	gh := newClient(t, s, s.AddToken(TokenOptions{}))
	jobID, _ := s.QueueJob("acme/api", []string{"linux"}, 50)
	before, _, err := gh.Actions.GenerateRepoJITConfig(context.Background(), "acme", "api", jitReq("before", "linux"))
	if err != nil {
		t.Fatal(err)
	}
	s.SetRunnerFault(runnerproto.AllRunners, runnerproto.FaultNeverOnline)
	jit, _, err := gh.Actions.GenerateRepoJITConfig(context.Background(), "acme", "api", jitReq("any-name", "linux"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _ := runnerproto.Decode(before.GetEncodedJITConfig()); cfg.Fault != "" {
		t.Fatalf("a runner registered before the fault got %q", cfg.Fault)
	}
	p := startRunner(t, extract(t, pkg.Path), jit.GetEncodedJITConfig())
	time.Sleep(300 * time.Millisecond) // proving an absence: it never connects
	if p.exited() {
		t.Fatal("the never-online runner exited by itself")
	}
	for _, r := range s.Runners() {
		if r.Name == "any-name" && r.Status != RunnerOffline {
			t.Fatalf("never-online runner listed %s", r.Status)
		}
	}
	if j, _ := s.Job(jobID); j.Status != StatusQueued {
		t.Fatalf("job = %+v, want it still queued", j)
	}
	_ = p.cmd.Process.Signal(sigTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d on SIGTERM, want 0", code)
	}
	s.SetRunnerFault(runnerproto.AllRunners, "")
	after, _, err := gh.Actions.GenerateRepoJITConfig(context.Background(), "acme", "api", jitReq("after", "linux"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _ := runnerproto.Decode(after.GetEncodedJITConfig()); cfg.Fault != "" {
		t.Fatalf("after clearing, a new runner got %q", cfg.Fault)
	}
}
