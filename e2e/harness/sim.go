package harness

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/ghsimtest"
)

// SimOptions shape the simulated GitHub of one test.
type SimOptions struct {
	Orgs  []string // organizations to create
	Repos []string // "owner/name" repositories to create (an unknown owner becomes an organization)
	Login string   // the user the token acts for; default "octocat"
	Seed  uint64   // seeds probabilistic faults
	// Limits are the simulator's secondary limits; zero fields are GitHub's (900 points a minute...).
	Limits ghsim.Limits
	// Actions shapes the simulated Actions service (scale sets): long poll, session expiry, GHES.
	Actions ghsim.ActionsOptions
}

// Sim is a running simulator with a token file and the fake runner package served. Its embedded
// *ghsim.Server is the scenario API: QueueJob, Jobs, Runners, Registrations, AddFault...
type Sim struct {
	*ghsim.Server
	TokenFile string // holds a valid token, mode 0600
	Package   ghsim.Package
}

// StartSim starts a simulator on 127.0.0.1 for the test's lifetime.
func StartSim(t testing.TB, opts SimOptions) *Sim {
	t.Helper()
	srv := ghsimtest.Start(t, ghsim.Options{Seed: opts.Seed, Limits: opts.Limits, Actions: opts.Actions})
	for _, o := range opts.Orgs {
		srv.CreateOrg(o)
	}
	for _, r := range opts.Repos {
		owner, name, ok := strings.Cut(r, "/")
		if !ok {
			t.Fatalf("harness: repository %q is not owner/name", r)
		}
		srv.CreateRepo(owner, name)
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(srv.AddToken(ghsim.TokenOptions{Login: opts.Login})+"\n"), 0o600); err != nil {
		t.Fatalf("harness: write the token file: %v", err)
	}
	pkg := fakeRunnerPackage(t)
	srv.ServeRunnerPackage(pkg)
	return &Sim{Server: srv, TokenFile: tokenFile, Package: pkg}
}

// MustQueue queues a job of duration in repo with labels and returns its id.
func (s *Sim) MustQueue(t testing.TB, repo string, labels []string, duration time.Duration) int64 {
	t.Helper()
	id, err := s.QueueJob(repo, labels, duration)
	if err != nil {
		t.Fatalf("harness: queue a job in %s: %v", repo, err)
	}
	return id
}

// MustJob returns the job with id.
func (s *Sim) MustJob(t testing.TB, id int64) ghsim.Job {
	t.Helper()
	j, ok := s.Job(id)
	if !ok {
		t.Fatalf("harness: the simulator has no job %d", id)
	}
	return j
}

// JobsDone reports whether every job in ids is completed.
func (s *Sim) JobsDone(ids ...int64) bool {
	for _, id := range ids {
		if j, ok := s.Job(id); !ok || j.Status != ghsim.StatusCompleted {
			return false
		}
	}
	return true
}

// WaitJobsDone waits until every job in ids is completed.
func (s *Sim) WaitJobsDone(t testing.TB, timeout time.Duration, ids ...int64) {
	t.Helper()
	if !Poll(timeout, func() bool { return s.JobsDone(ids...) }) {
		t.Fatalf("timed out after %s waiting for jobs to complete:\n%s", timeout, s.describeJobs(ids))
	}
}

// WaitJobStatus waits until job id has status (queued, in_progress, completed).
func (s *Sim) WaitJobStatus(t testing.TB, timeout time.Duration, id int64, status string) ghsim.Job {
	t.Helper()
	var j ghsim.Job
	if !Poll(timeout, func() bool { j, _ = s.Job(id); return j.Status == status }) {
		t.Fatalf("timed out after %s waiting for job %d to be %s; it is %q", timeout, id, status, j.Status)
	}
	return j
}

// ManagedRunners are the registered runners named like runner-manager's (runner-manager-*).
func (s *Sim) ManagedRunners() []ghsim.Runner {
	var out []ghsim.Runner
	for _, r := range s.Runners() {
		if strings.HasPrefix(r.Name, RunnerPrefix) {
			out = append(out, r)
		}
	}
	return out
}

// RegistrationsOf are the JIT registrations ever made in scope ("owner/name" or org), oldest first.
func (s *Sim) RegistrationsOf(scope string) []ghsim.Registration {
	var out []ghsim.Registration
	for _, r := range s.Registrations() {
		if strings.EqualFold(r.Scope, scope) {
			out = append(out, r)
		}
	}
	return out
}

func (s *Sim) describeJobs(ids []int64) string {
	var b strings.Builder
	for _, j := range s.Jobs() {
		if len(ids) > 0 && !slices.Contains(ids, j.ID) {
			continue
		}
		b.WriteString("  " + describeJob(j) + "\n")
	}
	return b.String()
}

func describeJob(j ghsim.Job) string {
	s := j.Repo + " job " + itoa(j.ID) + " " + strings.Join(j.Labels, ",") + ": " + j.Status
	if j.Conclusion != "" {
		s += " (" + j.Conclusion + ")"
	}
	if j.RunnerName != "" {
		s += " on " + j.RunnerName
	}
	return s
}
