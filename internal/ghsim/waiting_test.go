package ghsim

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestWaitingJobIsHeldUntilApproved: JobSpec.Waiting holds a job as a deployment protection rule
// does: announced by a queued delivery whose job is waiting (octokit's queued.with-deployment),
// its run waiting, taken by no runner and offered to no scale set; ApproveJob queues it, with a
// second queued delivery, and the set is offered it.
func TestWaitingJobIsHeldUntilApproved(t *testing.T) {
	s, _ := newScaleSetServer(t, ActionsOptions{})
	url, ch := hookReceiver(t, "s3cret")
	s.AddWebhook(url, "s3cret")
	c := connect(t, s, "acme")
	c.createSet("deploy-set")
	id, err := s.QueueJobSpec(JobSpec{Repo: "acme/api", Labels: []string{"deploy-set"}, Duration: time.Minute, Waiting: true})
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch).event; ev.GetAction() != "queued" || ev.GetWorkflowJob().GetStatus() != StatusWaiting {
		t.Errorf("delivery: action %s, status %s; want queued, waiting", ev.GetAction(), ev.GetWorkflowJob().GetStatus())
	}
	gh := newClient(t, s, s.AddToken(TokenOptions{}))
	runStatus := func() string {
		t.Helper()
		runs, _, err := gh.Actions.ListRepositoryWorkflowRuns(context.Background(), "acme", "api", nil)
		if err != nil || len(runs.WorkflowRuns) != 1 {
			t.Fatalf("runs: %v", err)
		}
		return runs.WorkflowRuns[0].GetStatus()
	}
	if st := runStatus(); st != StatusWaiting {
		t.Errorf("run status %s, want waiting", st)
	}
	if sets := s.ScaleSets(); sets[0].Statistics.TotalAssignedJobs+sets[0].Statistics.TotalAvailableJobs != 0 {
		t.Errorf("a waiting job reached the scale set: %+v", sets[0].Statistics)
	}
	if r := do(t, "POST", s.URL()+"/_ghsim/admin/jobs/"+itoa(id)+"/approve", "", nil, nil); r.code != http.StatusNoContent {
		t.Fatalf("admin approve: %d %s", r.code, r.body)
	}
	if ev := next(t, ch).event; ev.GetAction() != "queued" || ev.GetWorkflowJob().GetStatus() != StatusQueued {
		t.Errorf("delivery after approval: action %s, status %s; want queued, queued", ev.GetAction(), ev.GetWorkflowJob().GetStatus())
	}
	if st := runStatus(); st != StatusQueued {
		t.Errorf("run status after approval %s, want queued", st)
	}
	if sets := s.ScaleSets(); sets[0].Statistics.TotalAvailableJobs != 1 {
		t.Errorf("the approved job did not reach the scale set: %+v", sets[0].Statistics)
	}
	if j, _ := s.Job(id); j.Status != StatusQueued {
		t.Errorf("job %s after approval, want queued", j.Status)
	}
	if err := s.ApproveJob(id); err == nil {
		t.Error("approving a queued job: no error")
	}
}
