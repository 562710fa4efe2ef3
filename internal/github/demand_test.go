package github

import (
	"context"
	"slices"
	"testing"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

func TestLabelsMatch(t *testing.T) {
	runner := []string{"Linux", "X64", "gpu"}
	cases := []struct {
		job  []string
		want bool
	}{
		{[]string{"self-hosted", "linux"}, true},
		{[]string{"SELF-HOSTED", "linux", "x64", "GPU"}, true},
		{[]string{"linux"}, true},
		{[]string{"self-hosted"}, true},
		{[]string{"self-hosted", "windows"}, false},
		{[]string{"ubuntu-latest"}, false},
		{nil, false},
	}
	for _, tc := range cases {
		if got := LabelsMatch(tc.job, runner); got != tc.want {
			t.Errorf("LabelsMatch(%v, %v) = %v, want %v", tc.job, runner, got, tc.want)
		}
	}
}

func TestQueuedJobsRepo(t *testing.T) {
	s := newSim(t)
	want, _ := s.srv.QueueJob("acme/api", []string{"self-hosted", "linux"}, -1)
	s.srv.QueueJob("acme/api", []string{"self-hosted", "windows"}, -1)
	s.srv.QueueJob("acme/api", []string{"ubuntu-latest"}, -1)
	c, _ := s.tokenClient(s.token)
	jobs, err := c.QueuedJobs(context.Background(), repoScope, []string{"Linux", "x64"})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != want || jobs[0].Repo != "acme/api" || !slices.Equal(jobs[0].Labels, []string{"self-hosted", "linux"}) {
		t.Fatalf("jobs = %+v, want only job %d", jobs, want)
	}
}

// An in_progress run can still hold queued jobs: here the run's first job was taken by a runner,
// so the run is in_progress, and a second job queued in the same repository must still count.
func TestQueuedJobsIncludeInProgressRuns(t *testing.T) {
	s := newSim(t)
	c, _ := s.tokenClient(s.token)
	taken, _ := s.srv.QueueJob("acme/api", []string{"self-hosted"}, -1)
	waiting, _ := s.srv.QueueJob("acme/api", []string{"self-hosted"}, -1)
	jit, err := c.GenerateJITConfig(context.Background(), repoScope, "runner-manager-1", []string{"self-hosted"}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	takeJob(t, s, jit)
	jobs, err := c.QueuedJobs(context.Background(), repoScope, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID == taken || jobs[0].ID != waiting {
		t.Fatalf("jobs = %+v, want only %d", jobs, waiting)
	}
}

func TestIdlePollsCostNoBudget(t *testing.T) {
	s := newSim(t)
	s.srv.QueueJob("acme/api", []string{"self-hosted", "linux"}, -1)
	c, _ := s.tokenClient(s.token)
	ctx := context.Background()
	first, err := c.QueuedJobs(ctx, repoScope, []string{"linux"})
	if err != nil {
		t.Fatal(err)
	}
	_, usedBefore, _ := s.srv.RateUsage(s.token)
	sent := len(s.Requests())
	for i := 0; i < 100; i++ {
		jobs, err := c.QueuedJobs(ctx, repoScope, []string{"linux"})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != len(first) || jobs[0].ID != first[0].ID {
			t.Fatalf("poll %d: %+v, want %+v", i, jobs, first)
		}
	}
	_, usedAfter, _ := s.srv.RateUsage(s.token)
	if usedAfter != usedBefore {
		t.Fatalf("100 idle polls used %d of the simulated budget, want 0", usedAfter-usedBefore)
	}
	reqs := s.Requests()[sent:]
	if len(reqs) != 300 { // queued runs, in_progress runs, one run's jobs
		t.Fatalf("%d requests for 100 polls, want 300", len(reqs))
	}
	for _, r := range reqs {
		if !r.NotModified || r.Status != 304 {
			t.Fatalf("idle poll request %+v was not a 304", r)
		}
	}
	if r, _ := c.Budget().Rate("core"); r.Limit != 5000 || r.Remaining != 5000-usedAfter {
		t.Fatalf("budget %+v after %d used", r, usedAfter)
	}
	// A change is seen at once: the cache never hides a new job.
	s.srv.QueueJob("acme/api", []string{"linux"}, -1)
	if jobs, _ := c.QueuedJobs(ctx, repoScope, []string{"linux"}); len(jobs) != 2 {
		t.Fatalf("after a new job: %d jobs, want 2", len(jobs))
	}
}

// TestWaitingJobsAreNoDemand: a job a deployment protection rule holds (status waiting) is not
// counted by the poll, neither in a run that only waits nor beside a job in progress in the same
// run (whose jobs the poll reads), until its environment is approved and it is queued.
func TestWaitingJobsAreNoDemand(t *testing.T) {
	s := newSim(t)
	c, _ := s.tokenClient(s.token)
	ctx := context.Background()
	held, err := s.srv.QueueJobSpec(ghsim.JobSpec{Repo: "acme/api", Labels: []string{"self-hosted"}, Duration: -1, Waiting: true})
	if err != nil {
		t.Fatal(err)
	}
	_, ids, err := s.srv.QueueRun("acme/api", 0, ghsim.JobSpec{Labels: []string{"self-hosted"}, Duration: -1},
		ghsim.JobSpec{Name: "deploy", Labels: []string{"self-hosted"}, Duration: -1, Waiting: true})
	if err != nil {
		t.Fatal(err)
	}
	jit, err := c.GenerateJITConfig(ctx, repoScope, "runner-manager-1", []string{"self-hosted"}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	takeJob(t, s, jit) // the one queued job: the waiting ones are no runner's
	if j, _ := s.srv.Job(ids[0]); j.Status != ghsim.StatusInProgress {
		t.Fatalf("job %d is %s, want in_progress (a runner took it)", ids[0], j.Status)
	}
	jobs, err := c.QueuedJobs(ctx, repoScope, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 0 {
		t.Fatalf("waiting jobs counted as demand: %+v", jobs)
	}
	for _, id := range []int64{held, ids[1]} {
		if err := s.srv.ApproveJob(id); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err = c.QueuedJobs(ctx, repoScope, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, j := range jobs {
		got = append(got, j.ID)
	}
	slices.Sort(got)
	if want := []int64{held, ids[1]}; !slices.Equal(got, want) {
		t.Fatalf("queued after approval %v, want %v", got, want)
	}
}
