package ghsim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
)

// CreateOrg creates an organization (idempotent) and returns its id.
func (s *Server) CreateOrg(login string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.account(login, true).id
}

// CreateUser creates a user account (idempotent) and returns its id.
func (s *Server) CreateUser(login string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.account(login, false).id
}

func (s *Server) account(login string, isOrg bool) *account {
	key := strings.ToLower(login)
	if a, ok := s.accounts[key]; ok {
		return a
	}
	a := &account{id: s.newID(), login: login, isOrg: isOrg}
	s.accounts[key] = a
	return a
}

// CreateRepo creates owner/name (idempotent); an unknown owner becomes an organization.
func (s *Server) CreateRepo(owner, name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(owner + "/" + name)
	if r, ok := s.repos[key]; ok {
		return r.id
	}
	r := &repo{id: s.newID(), owner: s.account(owner, true), name: name}
	s.repos[key] = r
	return r.id
}

// CreateRunnerGroup adds a runner group to org and returns its id (the default group is id 1).
func (s *Server) CreateRunnerGroup(org, name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.account(org, true)
	g := &runnerGroup{id: s.newID(), name: name, org: strings.ToLower(org)}
	s.groups[g.id] = g
	return g.id
}

// SetRunnerGroupRepos limits runner group id to the given "owner/name" repositories (GitHub's
// visibility "selected"): its runners take no job of any other repository. No repositories at all
// leaves the group usable by none; call with all=true to restore visibility "all".
func (s *Server) SetRunnerGroupRepos(id int64, all bool, repos ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[id]
	if g == nil || g.org == "" {
		return errUnknown("organization runner group", strconv.FormatInt(id, 10))
	}
	g.repos = nil
	if !all {
		g.repos = map[string]bool{}
		for _, r := range repos {
			g.repos[strings.ToLower(r)] = true
		}
	}
	return nil
}

// JobSpec describes a job for QueueJobSpec. Repo and Labels are required.
type JobSpec struct {
	Repo         string        // owner/name
	Labels       []string      // runs-on labels
	Duration     time.Duration // how long the fake runner "runs" it; <0 = until FinishJob
	Name         string        // default "build"
	WorkflowName string        // default "CI"
	Fault        string        // a runnerproto.Fault* the runner taking it must play
	// Command makes a command job: the fake runner taking it runs Command with /bin/sh -c as its
	// own user and reports its output and exit status (CommandResult). The job lasts as long as
	// the command, Duration is ignored, and it concludes success on exit 0, failure otherwise.
	Command string
	// Waiting holds the job as a deployment protection rule does (an environment awaiting approval):
	// status waiting, its run waiting, announced by a queued delivery whose job is waiting (octokit's
	// queued.with-deployment example); no runner takes it and no scale set is offered it until
	// ApproveJob queues it.
	Waiting bool
}

// CommandResult is what a command job's command did, as its runner reported it.
type CommandResult = runnerproto.CommandResult

// QueueJob queues a one-job workflow run in repo ("owner/name") and returns the job id.
func (s *Server) QueueJob(repo string, labels []string, duration time.Duration) (int64, error) {
	return s.QueueJobSpec(JobSpec{Repo: repo, Labels: labels, Duration: duration})
}

// QueueJobSpec is QueueJob with every knob.
func (s *Server) QueueJobSpec(spec JobSpec) (int64, error) {
	_, ids, err := s.QueueRun(spec.Repo, 0, spec)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// QueueRun queues a workflow run in repo with the given jobs, all queued now. later is how many more
// jobs the run will get through QueueInRun (matrix legs or jobs whose needs are not met yet): until
// they are queued the run is not completed, as on GitHub. Each spec's Repo is ignored.
func (s *Server) QueueRun(repo string, later int, specs ...JobSpec) (runID int64, jobIDs []int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[strings.ToLower(repo)]
	if rp == nil {
		return 0, nil, errUnknown("repository", repo)
	}
	if len(specs) == 0 {
		return 0, nil, fmt.Errorf("ghsim: a run needs at least one job queued at once")
	}
	workflow := specs[0].WorkflowName
	if workflow == "" {
		workflow = "CI"
	}
	now := s.now()
	ru := &run{id: s.newID(), repo: rp, name: workflow, createdAt: now, updatedAt: now, held: later}
	for _, other := range s.runs {
		if other.repo == rp {
			ru.number++
		}
	}
	ru.number++
	s.runs[ru.id] = ru
	for _, spec := range specs {
		jobIDs = append(jobIDs, s.addJob(ru, spec, now).id)
	}
	return ru.id, jobIDs, nil
}

// QueueInRun queues one more job in run runID, one of the jobs QueueRun announced as later.
func (s *Server) QueueInRun(runID int64, spec JobSpec) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ru := s.runs[runID]
	if ru == nil {
		return 0, errUnknown("run", fmt.Sprint(runID))
	}
	if ru.held <= 0 {
		return 0, fmt.Errorf("ghsim: run %d announced no more jobs (QueueRun's later)", runID)
	}
	ru.held--
	now := s.now()
	ru.updatedAt = now
	return s.addJob(ru, spec, now).id, nil
}

// addJob creates a queued job in ru and sends its queued delivery. Callers hold s.mu.
func (s *Server) addJob(ru *run, spec JobSpec, now time.Time) *job {
	if spec.Name == "" {
		spec.Name = "build"
	}
	if spec.Command != "" {
		spec.Duration = -1 // it lasts as long as its command
	}
	j := &job{id: s.newID(), runID: ru.id, repo: ru.repo, name: spec.Name, workflowName: ru.name,
		labels: slices.Clone(spec.Labels), duration: spec.Duration, fault: spec.Fault, command: spec.Command, status: StatusQueued,
		headSHA: fmt.Sprintf("%040x", ru.id), createdAt: now}
	if spec.Waiting {
		j.status = StatusWaiting
	}
	ru.jobIDs = append(ru.jobIDs, j.id)
	s.jobs[j.id] = j
	s.queueWebhook(j, "queued")
	s.routeJob(j)
	return j
}

// Job returns a snapshot of job id.
func (s *Server) Job(id int64) (Job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return Job{}, false
	}
	return j.snapshot(), true
}

// CommandResult returns what command job id's command did, once its runner has reported the job
// complete; false before that, for a job that is not a command job, and for one whose runner never
// reported (it crashed, or the job was finished with runnerGone).
func (s *Server) CommandResult(id int64) (CommandResult, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok || j.result == nil {
		return CommandResult{}, false
	}
	return *j.result, true
}

// Jobs returns every job, oldest first.
func (s *Server) Jobs() []Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Job, 0, len(s.jobs))
	for _, j := range s.sortedJobs() {
		out = append(out, j.snapshot())
	}
	return out
}

func (s *Server) sortedJobs() []*job { return byID(s.jobs, nil) }

// FinishJob ends a job with conclusion ("success", "failure", "cancelled"). A job its runner is
// running is stopped through the runner (it reports back); a job whose runner is gone (crashed,
// killed) is concluded at once and its runner released, as GitHub does after losing a runner.
func (s *Server) FinishJob(id int64, conclusion string, runnerGone bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return errUnknown("job", fmt.Sprint(id))
	}
	if j.status == StatusCompleted {
		return nil
	}
	if j.status == StatusInProgress && !runnerGone {
		j.finish, j.finishAs = true, conclusion
		return nil
	}
	s.completeJob(j, conclusion)
	return nil
}

// Runners returns every registered runner, by id.
func (s *Server) Runners() []Runner {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Runner, 0, len(s.runners))
	for _, r := range s.sortedRunners("") {
		out = append(out, r.snapshot(s.now()))
	}
	return out
}

// sortedRunners returns the runners of sc ("": every scope) by id.
func (s *Server) sortedRunners(sc scope) []*runner {
	return byID(s.runners, func(r *runner) bool { return sc == "" || r.scope == sc })
}

// Registrations returns the history of JIT registrations, including removed runners.
func (s *Server) Registrations() []Registration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Registration, 0, len(s.registrations))
	for _, r := range s.registrations {
		c := *r
		c.Labels = slices.Clone(r.Labels)
		out = append(out, c)
	}
	return out
}

// SetRunnerFault makes the runner named name (registered now or later) play fault, a
// runnerproto.Fault* constant; "" clears it. The name runnerproto.AllRunners ("*") sets it for
// every runner registered from then on (a runner's own name wins).
func (s *Server) SetRunnerFault(name, fault string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fault == "" {
		delete(s.runnerFaults, name)
		return
	}
	s.runnerFaults[name] = fault
}

// RemoveRunner deletes the registration of the runner called name even while it runs a job, as
// an organization admin (or GitHub's own cleanup) can, leaving the runner process alive: it
// finds out at its next call, if it makes one (actions/runner #4617: a runner that keeps polling
// after its registration was removed). Its job stays in progress until FinishJob.
func (s *Server) RemoveRunner(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rn := range s.runners {
		if rn.name == name {
			s.removeRunner(rn, "admin")
			return nil
		}
	}
	return errUnknown("runner", name)
}

// registeredFault is the fault a runner registered now plays: its own, else the one for every
// runner. Caller holds s.mu.
func (s *Server) registeredFault(name string) string {
	if f, ok := s.runnerFaults[name]; ok {
		return f
	}
	return s.runnerFaults[runnerproto.AllRunners]
}

// jitFault is the part of a fault that travels in the JIT config: never_online, which a runner
// plays before it could read the connect reply.
func jitFault(fault string) string {
	if fault == runnerproto.FaultNeverOnline {
		return fault
	}
	return ""
}

func (s *Server) registration(id int64) *Registration {
	for _, r := range s.registrations {
		if r.RunnerID == id {
			return r
		}
	}
	return &Registration{}
}
