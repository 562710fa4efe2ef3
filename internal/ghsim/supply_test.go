package ghsim

import (
	"context"
	"testing"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

// TestSupplyAndDemandReads: a registered runner is a launch in flight until it connects, idle until
// it takes a job, and counts no more once it holds one; only the repository's own jobs and runners
// count. DemandReads counts the run, job and runner-list reads and nothing else.
func TestSupplyAndDemandReads(t *testing.T) {
	ctx := context.Background()
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	s.CreateRepo("acme", "web")
	gh := newClient(t, s, s.AddToken(TokenOptions{}))
	s.ServeRunnerPackage(testPackage(t))
	s.QueueJob("acme/web", []string{"linux"}, -1) // another repository's job
	if got := s.Supply("acme/api"); got != (Supply{}) {
		t.Fatalf("empty repository: %+v", got)
	}
	jit, _, err := gh.Actions.GenerateRepoJITConfig(ctx, "acme", "api", jitReq("r-1", "gpu"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Supply("acme/api"); got != (Supply{Starting: 1}) || got.Over(0) != 1 {
		t.Fatalf("registered, not connected: %+v, want one launch in flight", got)
	}
	p := startRunner(t, extract(t, testPackage(t).Path), "", "--jitconfig", jit.GetEncodedJITConfig())
	livetest.Eventually(t, "the runner to connect", func() bool { return s.Supply("acme/api").Idle == 1 })
	job, _ := s.QueueJob("acme/api", []string{"gpu"}, -1)
	livetest.Eventually(t, "the runner to take the job", func() bool { j, _ := s.Job(job); return j.Status == StatusInProgress })
	if got := s.Supply("ACME/api"); got != (Supply{}) {
		t.Fatalf("the runner holds the job: %+v, want nothing queued and no runner without a job", got)
	}
	if err := s.FinishJob(job, "success", false); err != nil {
		t.Fatal(err)
	}
	p.wait(t)

	before := s.DemandReads()
	if _, _, err := gh.Actions.ListRepositoryWorkflowRuns(ctx, "acme", "api", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Actions.ListRunners(ctx, "acme", "api", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Actions.ListOrganizationRunners(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Actions.GenerateRepoJITConfig(ctx, "acme", "api", jitReq("r-2", "gpu")); err != nil {
		t.Fatal(err)
	}
	if got := s.DemandReads() - before; got != 3 {
		t.Fatalf("DemandReads counted %d requests, want 3 (runs, repository runners, organization runners; not the JIT call)", got)
	}
}
