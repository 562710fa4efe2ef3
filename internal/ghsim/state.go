package ghsim

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
)

// Job states and the conclusions the simulator reports, as GitHub spells them.
const (
	StatusQueued     = "queued"
	StatusWaiting    = "waiting" // a deployment protection rule holds the job (JobSpec.Waiting)
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
)

// Runner statuses as the runners endpoints report them.
const (
	RunnerOnline  = "online"
	RunnerOffline = "offline"
)

type account struct {
	id    int64
	login string
	isOrg bool
}

type repo struct {
	id        int64
	owner     *account
	name      string
	forbidden bool // SetRepoForbidden: every REST call on it answers 403
}

func (r *repo) fullName() string { return r.owner.login + "/" + r.name }

// scope is where a runner is registered: a repository ("owner/name") or an organization ("org").
type scope string

func repoScope(r *repo) scope   { return scope("repo:" + strings.ToLower(r.fullName())) }
func orgScope(a *account) scope { return scope("org:" + strings.ToLower(a.login)) }

type runnerGroup struct {
	id   int64
	name string
	org  string // lower-case org login; "" for the repository default group
	// repos limits the repositories whose jobs the group's runners may take (GitHub's visibility
	// "selected"): lower-case full names; nil = every repository of the organization ("all").
	repos map[string]bool
}

// takes reports whether the group's runners may run a job of repository rp.
func (g *runnerGroup) takes(rp *repo) bool {
	return g == nil || g.repos == nil || g.repos[strings.ToLower(rp.fullName())]
}

type runner struct {
	id         int64
	name       string
	scope      scope
	labels     []string
	groupID    int64
	groupName  string
	credential string
	status     string    // online after connect, offline after disconnect
	lastSeen   time.Time // last fake-runner call, on the simulator's clock
	busy       bool
	jobID      int64
	fault      string
	createdAt  time.Time
	scaleSetID int64 // registered through a scale set's JIT endpoint (scaleset.go)
}

type job struct {
	id           int64
	runID        int64
	repo         *repo
	name         string
	workflowName string
	labels       []string
	duration     time.Duration // <0: runs until FinishJob
	fault        string
	command      string                     // a command job's shell command (JobSpec.Command)
	result       *runnerproto.CommandResult // what the command did, once reported
	status       string
	conclusion   string
	runnerID     int64
	runnerName   string
	groupID      int64
	groupName    string
	headSHA      string
	createdAt    time.Time
	startedAt    time.Time
	completedAt  time.Time
	finish       bool // FinishJob asked the runner to stop
	finishAs     string
	set          *setJob // routed to a scale set (scaleset.go)
}

type run struct {
	id        int64
	number    int
	repo      *repo
	name      string
	jobIDs    []int64
	held      int // jobs announced (QueueRun's later) but not queued yet
	createdAt time.Time
	updatedAt time.Time
}

// token is a credential the API accepts.
type token struct {
	kind           string // "pat", "installation", "user"
	login          string // user behind a PAT or user token
	installationID int64
	repos          map[string]bool   // lower-case full names; nil = every repository the login may see
	noAdmin        bool              // lacks administration rights: runner endpoints answer 403
	scopes         []string          // classic PAT: its OAuth scopes (X-OAuth-Scopes); nil for other kinds
	perms          map[string]string // fine-grained PAT and installation token: permission -> "read"/"write"
	expiresAt      time.Time         // zero = never
	revoked        bool
	bucket         *bucket
}

type app struct {
	id       int64
	clientID string // Iv23... (appClientID); a JWT's iss may name it instead of id
	key      *rsa.PublicKey
	slug     string
	bucket   *bucket
}

type installation struct {
	id      int64
	appID   int64
	account *account
	repos   map[string]bool   // lower-case full names; nil = all repositories of the account
	perms   map[string]string // the installation's permissions; its tokens carry them
	bucket  *bucket
}

// newSecret returns prefix + 36 random hex characters: the shape of GitHub's tokens (ghp_, ghs_...).
func newSecret(prefix string) string {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		panic("ghsim: crypto/rand failed: " + err.Error()) // the OS RNG failing is a broken host
	}
	return prefix + hex.EncodeToString(b)
}

// labelsSatisfy reports whether a runner with runnerLabels can take a job asking for jobLabels:
// every job label must be a runner label, case-insensitively, and `self-hosted` is implied.
func labelsSatisfy(jobLabels, runnerLabels []string) bool {
	have := map[string]bool{"self-hosted": true}
	for _, l := range runnerLabels {
		have[strings.ToLower(l)] = true
	}
	for _, l := range jobLabels {
		if !have[strings.ToLower(l)] {
			return false
		}
	}
	return true
}

// Job is a snapshot of a simulated workflow job, for assertions.
type Job struct {
	ID          int64     `json:"id"`
	RunID       int64     `json:"run_id"`
	Repo        string    `json:"repo"` // owner/name
	Name        string    `json:"name"`
	Labels      []string  `json:"labels"`
	Command     string    `json:"command,omitempty"` // a command job's command (JobSpec.Command)
	Status      string    `json:"status"`            // waiting, queued, in_progress, completed
	Conclusion  string    `json:"conclusion"`        // success, failure, cancelled or ""
	RunnerID    int64     `json:"runner_id"`
	RunnerName  string    `json:"runner_name"`
	CreatedAt   time.Time `json:"created_at"`
	StartedAt   time.Time `json:"started_at"`
	CompletedAt time.Time `json:"completed_at"`
}

func (j *job) snapshot() Job {
	return Job{ID: j.id, RunID: j.runID, Repo: j.repo.fullName(), Name: j.name,
		Labels: append([]string(nil), j.labels...), Command: j.command, Status: j.status, Conclusion: j.conclusion,
		RunnerID: j.runnerID, RunnerName: j.runnerName, CreatedAt: j.createdAt,
		StartedAt: j.startedAt, CompletedAt: j.completedAt}
}

// Runner is a snapshot of a registered runner.
type Runner struct {
	ID      int64    `json:"id"`
	Name    string   `json:"name"`
	Scope   string   `json:"scope"` // "owner/name" for a repository runner, "org" for an organization runner, "enterprises/<slug>" for an enterprise runner
	Labels  []string `json:"labels"`
	GroupID int64    `json:"group_id"`
	Status  string   `json:"status"` // online or offline
	Busy    bool     `json:"busy"`
	JobID   int64    `json:"job_id"`
}

// runnerHeartbeat is how long an online runner may stay silent before it is listed offline, as
// GitHub does for a runner whose process died without saying goodbye.
const runnerHeartbeat = time.Minute

// statusAt is the status the API reports at now.
func (r *runner) statusAt(now time.Time) string {
	if r.status == RunnerOnline && now.Sub(r.lastSeen) < runnerHeartbeat {
		return RunnerOnline
	}
	return RunnerOffline
}

func (r *runner) snapshot(now time.Time) Runner {
	return Runner{ID: r.id, Name: r.name, Scope: r.scope.display(), Labels: append([]string(nil), r.labels...),
		GroupID: r.groupID, Status: r.statusAt(now), Busy: r.busy, JobID: r.jobID}
}

func (s scope) display() string {
	kind, v, _ := strings.Cut(string(s), ":")
	if kind == "enterprise" {
		return "enterprises/" + v
	}
	return v
}

// Registration records one JIT registration and what became of it, including after deletion.
type Registration struct {
	RunnerID     int64     `json:"runner_id"`
	Name         string    `json:"name"`
	Scope        string    `json:"scope"`
	Labels       []string  `json:"labels"`
	RegisteredAt time.Time `json:"registered_at"`
	Online       bool      `json:"online"`     // the runner ever connected
	JobID        int64     `json:"job_id"`     // the job it took, 0 if none
	RemovedAt    time.Time `json:"removed_at"` // zero while still registered
	RemovedBy    string    `json:"removed_by"` // "delete" (API call), "ephemeral" (removed after its job) or "admin" (RemoveRunner)
	ScaleSetID   int64     `json:"scale_set_id,omitempty"`
}
