package ghsim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

// TestFullLifecycle drives GitHub's side by hand through go-github: queue a job, download the
// runner package, generate a JIT config, start the fake runner, see the job complete and the
// ephemeral runner removed.
func TestFullLifecycle(t *testing.T) {
	ctx := context.Background()
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	tok := s.AddToken(TokenOptions{Login: "ops"})
	gh := newClient(t, s, tok)
	s.ServeRunnerPackage(testPackage(t))

	jobID, err := s.QueueJob("acme/api", []string{"Linux", "gpu"}, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	runs, _, err := gh.Actions.ListRepositoryWorkflowRuns(ctx, "acme", "api", &github.ListWorkflowRunsOptions{Status: "queued"})
	if err != nil || runs.GetTotalCount() != 1 {
		t.Fatalf("queued runs = %v, %v; want 1", runs.GetTotalCount(), err)
	}
	jobs, _, err := gh.Actions.ListWorkflowJobs(ctx, "acme", "api", runs.WorkflowRuns[0].GetID(), nil)
	if err != nil || len(jobs.Jobs) != 1 || jobs.Jobs[0].GetID() != jobID || jobs.Jobs[0].GetStatus() != "queued" {
		t.Fatalf("jobs = %+v, %v", jobs, err)
	}

	dls, _, err := gh.Actions.ListRunnerApplicationDownloads(ctx, "acme", "api")
	if err != nil || len(dls) != 1 {
		t.Fatalf("downloads = %v, %v", dls, err)
	}
	resp, err := http.Get(dls[0].GetDownloadURL())
	if err != nil {
		t.Fatal(err)
	}
	tarball, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(tarball)
	if hex.EncodeToString(sum[:]) != dls[0].GetSHA256Checksum() {
		t.Fatal("downloaded package does not match sha256_checksum")
	}
	path := t.TempDir() + "/" + dls[0].GetFilename()
	if err := os.WriteFile(path, tarball, 0o644); err != nil {
		t.Fatal(err)
	}

	jit, _, err := gh.Actions.GenerateRepoJITConfig(ctx, "acme", "api", &github.GenerateJITConfigRequest{
		Name: "runner-manager-1", RunnerGroupID: 1, Labels: []string{"linux", "GPU"}})
	if err != nil {
		t.Fatal(err)
	}
	if jit.Runner.GetStatus() != "offline" {
		t.Fatalf("new runner status = %q, want offline", jit.Runner.GetStatus())
	}
	p := startRunner(t, extract(t, path), jit.GetEncodedJITConfig())
	if code := p.wait(t); code != 0 {
		t.Fatalf("runner exit = %d, output:\n%s", code, p.out.String())
	}

	j, _, err := gh.Actions.GetWorkflowJobByID(ctx, "acme", "api", jobID)
	if err != nil {
		t.Fatal(err)
	}
	if j.GetStatus() != "completed" || j.GetConclusion() != "success" || j.GetRunnerID() != jit.Runner.GetID() ||
		j.GetRunnerName() != "runner-manager-1" || j.StartedAt == nil || j.CompletedAt == nil {
		t.Fatalf("job after run = %+v", j)
	}
	list, _, err := gh.Actions.ListRunners(ctx, "acme", "api", nil)
	if err != nil || list.TotalCount != 0 {
		t.Fatalf("runners after ephemeral job = %d, %v; want 0", list.TotalCount, err)
	}
	_, err = gh.Actions.RemoveRunner(ctx, "acme", "api", jit.Runner.GetID())
	var ge *github.ErrorResponse
	if !errors.As(err, &ge) || ge.Response.StatusCode != http.StatusNotFound {
		t.Fatalf("delete of removed runner: %v, want 404", err)
	}
	regs := s.Registrations()
	if len(regs) != 1 || !regs[0].Online || regs[0].JobID != jobID || regs[0].RemovedBy != "ephemeral" {
		t.Fatalf("registrations = %+v", regs)
	}
}
