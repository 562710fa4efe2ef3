package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// Journal is the subset of the journal the engine uses; *journal.Journal satisfies it (deps_test.go checks). Plan is the
// persistent allocation point for capacity; the engine adds only an in-process mutex around it.
type Journal interface {
	Plan(ctx context.Context, req journal.PlanRequest) (journal.Attempt, error)
	Transition(ctx context.Context, id string, to journal.State, update func(*journal.Attempt)) (journal.Attempt, error)
	Live(ctx context.Context) ([]journal.Attempt, error)
	// RecordGitHubContact stores the time of the last successful GitHub answer of account (at most
	// once a minute per account).
	RecordGitHubContact(ctx context.Context, account string, t time.Time) error
}

// Job is one workflow job whose runs-on labels the target's runners satisfy: queued, or in
// progress on the runner named Runner.
type Job struct {
	ID       int64
	Name     string
	Labels   []string
	QueuedAt time.Time // when GitHub queued it (created_at); zero if unknown. Only scale-up metrics use it.
	// Runner is the name of the runner running the job; "" while it is queued. A Demand may report
	// jobs in progress: they are no demand, they name a busy runner's job (journal JobID).
	Runner string
}

// Demand reports the jobs waiting for a runner of target t (polling or webhook-fed). An error
// with `Partial() bool` true (some of an organization's repositories could not be read) comes with
// valid jobs for the rest: the pass uses them and names the error in status.
type Demand interface {
	Queued(ctx context.Context, t config.Target) ([]Job, error)
}

// JITRequest asks for a just-in-time runner registration.
type JITRequest struct {
	Name        string // attempt.RunnerName: "runner-manager-<attempt id>"
	Labels      []string
	RunnerGroup string // "" = the default group
	WorkDir     string
}

// Registration is a JIT registration just created. JITConfig is a secret: never log it.
type Registration struct {
	RunnerID  int64
	JITConfig string
}

// Runner is one self-hosted runner as GitHub lists it for a target.
type Runner struct {
	ID     int64
	Name   string
	Busy   bool
	Online bool
}

// Registrar manages registrations at GitHub for target t's identity (repository or organization).
// DeleteRunner returns ErrRunnerBusy when GitHub refuses because the runner is running a job, and
// nil when the runner is already gone (404), so deletion is idempotent.
type Registrar interface {
	JITConfig(ctx context.Context, t config.Target, req JITRequest) (Registration, error)
	Runners(ctx context.Context, t config.Target) ([]Runner, error)
	DeleteRunner(ctx context.Context, t config.Target, runnerID int64) error
}

// Process identifies a shim process; StartTime is as the OS reports it, so a reused pid is not life.
type Process struct {
	PID       int
	StartTime uint64
	// Container names the runner's container when it runs in one (PID is then its init on the
	// host): Stop and Kill go through the container runtime.
	Container string
}

// processOf is the process attempt a journaled (its shim, or its container's init).
func processOf(a journal.Attempt) Process {
	return Process{PID: a.ShimPID, StartTime: a.ShimStart, Container: a.Container}
}

// LaunchSpec is what Start needs; RuntimeDir has been prepared by Prepare. JITConfig is a secret.
type LaunchSpec struct {
	AttemptID  string
	RuntimeDir string
	JITConfig  string
	Env        map[string]string
	WorkDir    string
	Slot       int // the attempt's host slot: a slot runs as its own runner user (docs/security.md)
	// Limits bound the runner's whole process tree (its cgroup): the target's, else the daemon's.
	Limits config.Limits
	// Container is the journaled name of the runner's container; "" runs it on the host. Target
	// is the target it is launched for (the container's image, network and volumes).
	Container string
	Target    config.Target
}

// ExitStatus is what the shim wrote into the runtime directory when the runner ended.
type ExitStatus struct {
	Exited bool // false: no status file (yet)
	Code   int
	// OOMKilled: the kernel killed a process of the runner's cgroup for going past memory_max
	// (the job failed for it, whatever the runner's own exit code).
	OOMKilled bool
}

// Launcher runs runners through the shim. Stop asks the shim to end the runner gracefully and
// returns; the engine calls it only after GitHub accepted the runner's deregistration, so it is never
// used on a runner that may be busy. Every method must be idempotent: recovery repeats them.
type Launcher interface {
	// Prepare materialises into dir the runner package of t.RunnerVersion ("latest" or "x.y.z"),
	// resolved for t's repository or organization (GitHub lists downloads per target).
	Prepare(ctx context.Context, t config.Target, dir string) error
	Start(ctx context.Context, spec LaunchSpec) (Process, error)
	Stop(ctx context.Context, p Process) error
	Alive(p Process) (bool, error)
	// ShimProcess reads the shim's own state file in dir: the process it runs, if it got that far.
	ShimProcess(dir string) (Process, bool, error)
	ExitStatus(dir string) (ExitStatus, error)
	RemoveRuntimeDir(ctx context.Context, dir string) error
	// RemoveWorkDir removes an attempt's own work directory (journal.Attempt.WorkDir) after its
	// runtime directory; a missing one is nothing to remove.
	RemoveWorkDir(ctx context.Context, dir string) error
}

// CgroupLauncher is a Launcher that runs each runner in a cgroup of its own (internal/runner's, on
// Linux). The engine journals an attempt's cgroup in its registered record, before Start creates
// it; removes it (every process in it killed, waited for until it is empty) before the attempt is
// cleaned; and at startup removes the cgroups no live attempt names. A Launcher without it, or
// whose CgroupPath is "", runs runners without cgroups.
type CgroupLauncher interface {
	// CgroupPath is the cgroup attempt id's runner would run in; "" when the host has none usable.
	CgroupPath(attemptID string) string
	// Cgroups lists this host's runner cgroups by attempt id.
	Cgroups() ([]string, error)
	// RemoveCgroup kills every process in attempt id's cgroup, waits until it is empty and removes
	// it; a missing one is already removed.
	RemoveCgroup(ctx context.Context, attemptID string) error
}

// PeerSupply is one host's runners of a target as the fleet counts them: Starting and Idle cover
// the fleet's demand; Free is how many more that host could start for the target now. List says
// the host waits for a runner list of the target (its runners are starting or changed, loop.watch):
// the target's leader reads one on its next pass, which the host then gets from the leader's view.
// Took counts the host's runners of the target that took a job (left Starting or Idle for busy or
// an end) since its loop started: the leader's view says how many of them its read saw. Unseen is
// how many of those the view the host last planned on had not seen (planInput.Unseen): each took a
// job, maybe one the view still lists as queued, so together they cover up to the view's queued
// jobs, never min_idle.
type PeerSupply struct {
	Host     string
	Starting int
	Idle     int
	Free     int
	List     bool
	Took     int64
	Unseen   int
}

// Fleet coordinates this host with the other hosts of a [fleet] serving the same targets
// (internal/fleet). nil means the host is alone and plans exactly as it would without a fleet.
// The engine asks it at the edges of a pass only (edge.go): Begin or BeginLight before the pass
// reads, and the FleetPass they return for the rest of that pass. The fleet keeps nothing of a
// pass between those calls: the pass holds it.
type Fleet interface {
	// Begin starts a full pass of t, before it reads GitHub: the fleet settles how this host serves
	// t in the pass (its leader, a follower reading the leader's view, or alone) and answers
	// whether the pass reads the runner list, given whether the engine's own rules want it
	// (list). A leader or a host alone lists when asked, and a leader also when another host
	// asked (PeerSupply.List); a follower gets the leader's list from its view, once per list the
	// leader read, and age is how long ago GitHub answered it. A list wanted and not given is
	// asked for again on the next pass.
	Begin(ctx context.Context, t config.Target, list bool) (pass FleetPass, read bool, age time.Duration)
	// BeginLight starts a pass of t that reads nothing from GitHub (a light pass: a watched runner
	// ended between full passes; or a draining loop's pass that owns nothing): the fleet settles
	// this host's role as Begin does, fences the pass's Share on the fleet's current view, not on
	// the one the last full pass read, and hands that view's jobs for the pass to plan on (none
	// when there is no view yet). shared is false when this host serves t alone (its config
	// differs, or it is not joined): the pass then plans on its own book, as a lone host does.
	// Share's saw is then the view's.
	BeginLight(t config.Target) (pass FleetPass, jobs []Job, shared bool)
}

// FleetPass is one pass of a target as the fleet sees it, from Begin or BeginLight to Publish.
type FleetPass interface {
	// Runners and Queued are the pass's reads of GitHub, through r and d: a follower's come from
	// the leader's view (its list once per list read), a leader's are published as the view.
	Runners(ctx context.Context, t config.Target, r Registrar) ([]Runner, error)
	Queued(ctx context.Context, t config.Target, d Demand) ([]Job, error)
	// Share calls decide with this host's name in the fleet and the other hosts' supply of t and publishes this host's supply as
	// decide returns it, in one transaction, so hosts deciding at once see each other's result.
	// decide may run more than once (a conflict retries); its last run counts. Share returns false
	// when it published nothing because the fleet's view of GitHub moved on since this pass read
	// it: the pass then starts and reaps nothing (a pass on the new view follows). saw is how many
	// of this host's takes (PeerSupply.Took) the jobs this pass plans on were read after, or -1
	// when the pass read them from GitHub itself: the runners that took a job since may have
	// taken one of those jobs, which the view still shows queued.
	Share(ctx context.Context, t config.Target, decide func(self string, peers []PeerSupply, saw int64) PeerSupply) bool
	// Publish replaces this host's supply of t without deciding (the end of a pass).
	Publish(ctx context.Context, t config.Target, mine PeerSupply)
}

// ErrRunnerBusy is returned by Registrar.DeleteRunner when GitHub refuses to delete a runner that is
// running a job (HTTP 422). The engine reads it as "it took a job: leave it".
var ErrRunnerBusy = errors.New("runner is running a job")

// ErrNotSent is returned by Registrar.JITConfig when the request never left this host (its
// context ended while it waited for the request governor): nothing was registered, so the
// attempt needs no lookup by name.
var ErrNotSent = errors.New("the registration request was not sent")

// ErrRunnerNameTaken is returned by Registrar.JITConfig when GitHub refuses the name because a
// registration with it exists (HTTP 409). Names are unique per attempt, so an earlier try of the
// same request reached GitHub: the engine finds that registration by name and deletes it.
var ErrRunnerNameTaken = errors.New("a runner with this name is already registered")

// ErrorClass is how the engine reads a failed call: it picks the backoff (backoff.go) and is shown
// in status as `backoff`. Classify is the one place that decides it; adapters give their errors the
// methods below, and internal/daemon's tests check its adapters' errors against Classify.
type ErrorClass string

const (
	ClassRateLimited  ErrorClass = "rate-limited" // back off until RetryAfter (primary or secondary limit)
	ClassUnauthorized ErrorClass = "unauthorized" // credential missing, expired or revoked (401)
	ClassTerminal     ErrorClass = "terminal"     // will not go away by retrying (403 permission, 404, bad config)
	ClassRetryable    ErrorClass = "retryable"    // network, 5xx, deadline: try again soon
)

// The methods Classify looks for with errors.As, checked in this order, so internal/github's error
// types need no adapter (its RateLimitedError, UnauthorizedError and Error already have them):
//
//	interface{ RetryAfter() time.Time } // ClassRateLimited
//	interface{ Unauthorized() bool }    // true: ClassUnauthorized
//	interface{ Terminal() bool }        // true: ClassTerminal
//	interface{ Temporary() bool }       // false: ClassTerminal
//
// An error with none of these methods (network, context deadline) is ClassRetryable.
type (
	rateLimited  interface{ RetryAfter() time.Time }
	unauthorized interface{ Unauthorized() bool }
	terminal     interface{ Terminal() bool }
	temporary    interface{ Temporary() bool }
)

// Classify maps an error onto the engine's classes; retryAt is set for ClassRateLimited only.
func Classify(err error) (class ErrorClass, retryAt time.Time) {
	var rl rateLimited
	if errors.As(err, &rl) {
		return ClassRateLimited, rl.RetryAfter()
	}
	var ua unauthorized
	if errors.As(err, &ua) && ua.Unauthorized() {
		return ClassUnauthorized, time.Time{}
	}
	var te terminal
	if errors.As(err, &te) && te.Terminal() {
		return ClassTerminal, time.Time{}
	}
	var tp temporary
	if errors.As(err, &tp) && !tp.Temporary() {
		return ClassTerminal, time.Time{}
	}
	return ClassRetryable, time.Time{}
}

// CrashPoint names a place in the lifecycle where a fault-injection harness may kill the daemon.
type CrashPoint string

const (
	CrashAfterPlan       CrashPoint = "after-plan"
	CrashAfterJIT        CrashPoint = "after-jit"
	CrashAfterRegistered CrashPoint = "after-registered"
	CrashAfterStart      CrashPoint = "after-start"
	CrashAfterStarted    CrashPoint = "after-started"
	CrashAfterBusy       CrashPoint = "after-busy"
	CrashAfterExit       CrashPoint = "after-exit"
	CrashAfterDeregister CrashPoint = "after-deregister"
	CrashMidClean        CrashPoint = "mid-clean"
	// CrashAfterCgroup: the runner's cgroup exists (and holds its limits), the runner is not started.
	// The launcher fires it (Options.Crash reaches it through internal/daemon), not the engine.
	CrashAfterCgroup CrashPoint = "after-cgroup"
	// CrashAfterCgroupRemoved: the runner's cgroup is killed and removed, its directories are not.
	CrashAfterCgroupRemoved CrashPoint = "after-cgroup-removed"
	// CrashAfterContainerCreated: a container runner's container is created, not started. The
	// container launcher fires it (through internal/daemon), not the engine.
	CrashAfterContainerCreated CrashPoint = "after-container-created"
)

// CrashHook is called at every CrashPoint with the attempt concerned; nil means no hook.
type CrashHook func(point CrashPoint, attemptID string)

// Pacer spreads passes evenly and stretches intervals the GitHub account cannot afford (the
// daemon plans it with internal/github's PlanPolls). Nil: each pass waits its poll interval, jittered.
type Pacer interface {
	// Interval is target name's poll interval when configured with base.
	Interval(name string, base time.Duration) time.Duration
	// Phase places target name's passes: at phase + k*interval from the Unix epoch.
	Phase(name string, interval time.Duration) time.Duration
	// StartWindow is how long the governor's ceiling needs for one pass of every target: the
	// loops' first passes are spread over it (or over the interval, when shorter).
	StartWindow() time.Duration
}

// Deps are the engine's collaborators. Journal is always required; Demand, Registrar and Launcher
// only once a config enables a target (a host with no enabled targets needs no credential).
type Deps struct {
	Journal   Journal
	Demand    Demand
	Registrar Registrar
	Launcher  Launcher
	Clock     Clock        // nil: RealClock
	Rand      Rand         // nil: a private generator; the supervisor serialises the loops' draws
	Logger    *slog.Logger // nil: slog.Default()
	Crash     CrashHook
	Observer  Observer // nil: nothing is reported (see Observer for what is)
	Fleet     Fleet    // nil: this host serves its targets alone
	Pacer     Pacer    // nil: no pacing
	Disk      Disk     // nil: min_free_disk is not checked
}

// Options are fixed for the supervisor's life.
type Options struct {
	// HostID is this host's identity in the journal; registrations named
	// "runner-manager-<HostID>-*" are this host's and nobody else's.
	HostID string
	// RuntimeRoot is where per-attempt runtime directories are created (<RuntimeRoot>/<attempt id>).
	RuntimeRoot string
	// PolicyKey keys the launch-policy fingerprints written to the journal (HMAC-SHA256), so env
	// values cannot be guessed from a copied journal. The daemon passes a random per-host key it
	// keeps in the journal; nil writes the unsalted form of earlier versions.
	PolicyKey []byte
	// EventLimit bounds the in-memory event log (default 512).
	EventLimit int
	// DrainPoll is the pass interval while draining and the journal poll of an upgrade (default 1s).
	DrainPoll time.Duration
	// CallTimeout bounds one pass's calls so a hung GitHub cannot wedge a loop forever (default 2m).
	CallTimeout time.Duration
	// ExitCheck, when positive, is how often a loop between passes checks (locally) whether one
	// of its runner processes ended; one that did gets a light pass, which concludes it and frees
	// its slot at once instead of at the next poll, minutes away when intervals stretch. 0: off.
	ExitCheck time.Duration
}

// RegistrationTimeout bounds a JIT registration once its request left the host (the wait for the
// request governor before it is the pass's CallTimeout's): GitHub answers one in well under a
// second, or not at all. It is also what settles an attempt a previous run of the daemon left
// planned (killed between its planned record and the registration's answer): any request that
// process sent was sent before this one started, so a runner list read RegistrationTimeout after
// the start shows it if it ever landed (observe, Settled), and the attempt's slot is freed then,
// not two minutes after its planned record (TestStarvedTargetGetsItsShare; docs/engine.md).
const RegistrationTimeout = 30 * time.Second

func (o Options) withDefaults() Options {
	if o.EventLimit <= 0 {
		o.EventLimit = 512
	}
	if o.DrainPoll <= 0 {
		o.DrainPoll = time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 2 * time.Minute
	}
	return o
}
