// Package status owns the daemon's local status API: the JSON documents it serves (the wire format
// of `runner-manager status --json`), the Source interface the daemon implements over the engine,
// the server on a 0600 unix socket in the state directory (on Windows, loopback TCP behind a token
// kept in a file only the daemon's account and Administrators read), the client the CLI uses, and
// the text renderings of both commands. It reads state, and asks for one thing only, a config
// reload (the daemon runs it as it runs SIGHUP's); it never changes the engine itself, never talks
// to GitHub, and never carries a secret (no token, JWT, private key or JIT config is in any document).
package status

import (
	"context"
	"path/filepath"
	"time"
)

// SocketName is the status socket's file name inside daemon.state_dir.
const SocketName = "status.sock"

// SocketPath is where the daemon serves and the CLI looks, for a given state directory: the unix
// socket, or on Windows the endpoint file naming the loopback TCP address and its token.
func SocketPath(stateDir string) string { return filepath.Join(stateDir, transportName) }

// Source produces the current snapshot; the daemon implements it with an adapter over the engine's
// Supervisor.Status(). Snapshot is called once per request and must not block on GitHub.
type Source interface {
	Snapshot(ctx context.Context) (Snapshot, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context) (Snapshot, error)

// Snapshot implements Source.
func (f SourceFunc) Snapshot(ctx context.Context) (Snapshot, error) { return f(ctx) }

// Snapshot is the document served at GET /v1/status. Fields are only ever added, never renamed, so
// scripts reading --json keep working across upgrades. Zero times are omitted.
type Snapshot struct {
	Version           string    `json:"version"` // the daemon's build version
	PID               int       `json:"pid"`
	StartedAt         time.Time `json:"started_at,omitzero"`
	MaxRunners        int       `json:"max_runners"`        // host-wide daemon.max_runners
	Draining          string    `json:"draining,omitempty"` // "", "shutdown" or "upgrade"
	Config            Config    `json:"config"`
	GitHubLastContact time.Time `json:"github_last_contact,omitzero"` // last successful GitHub API request of any account
	// GitHubLastContactByAccount is, with several accounts configured, each one's last successful
	// GitHub API request by account name ("default" for [github]), from the journal; an account
	// without one is absent. Absent with [github] alone, where github_last_contact says it all.
	GitHubLastContactByAccount map[string]time.Time `json:"github_last_contact_by_account,omitempty"`
	GitHubPolling              *Polling             `json:"github_polling,omitempty"` // the [github] account's poll plan
	// GitHubPollingByAccount is every configured account's poll plan, by account name ("default"
	// for [github]): each account has its own governor and ceiling. Absent when GitHubPolling is.
	GitHubPollingByAccount map[string]*Polling `json:"github_polling_by_account,omitempty"`
	Targets                []Target            `json:"targets"`
	Runners                []Runner            `json:"runners"`
	Events                 []Event             `json:"events"`          // recent operator-visible events, oldest first
	Fleet                  *Fleet              `json:"fleet,omitempty"` // with a [fleet] only
	// Isolation says how runners are contained: a cgroup each, or (none usable) only their slot
	// users, ended by uid. Absent from a daemon older than it.
	Isolation *Isolation `json:"isolation,omitempty"`
}

// Isolation is how this daemon ends runners and bounds them (docs/runner-processes.md, "cgroups").
type Isolation struct {
	Cgroups    bool   `json:"cgroups"`               // each runner runs in a cgroup of its own
	CgroupRoot string `json:"cgroup_root,omitempty"` // the v2 directory holding the runners' cgroups
	// NoCgroups says why there are none: a runner's leftovers are then killed by its slot's uid,
	// and no memory, CPU or process limit can apply (a config setting one has its launches refused).
	NoCgroups string `json:"no_cgroups,omitempty"`
}

// Polling is the request governor's plan for the configured targets (docs/github.md).
type Polling struct {
	PointsPerMinute int     `json:"points_per_minute"`      // the governor's ceiling
	NeedPerMinute   int     `json:"need_points_per_minute"` // what the targets need at their configured intervals
	Stretch         float64 `json:"stretch"`                // >= 1: every interval is this many times longer
	Message         string  `json:"message,omitempty"`      // set when intervals stretch
	// UsedPerMinute is the points this host sent over the last 60 s: in github_polling every
	// account summed (runner-manager top), in github_polling_by_account the account's own, what its
	// governor spends against its PointsPerMinute.
	UsedPerMinute int `json:"used_points_per_minute"`
	// Fleet is how this host shares the ceiling with its fleet (absent without a [fleet]).
	Fleet *PollingFleet `json:"fleet,omitempty"`
}

// PollingFleet is this host's part of a ceiling its fleet shares (docs/fleet.md).
type PollingFleet struct {
	Hosts int `json:"hosts"` // live hosts sharing the ceiling; 0 when not joined
	// SharePerMinute is the points a minute this host may spend now: its share while joined,
	// the whole ceiling while not (degraded mode: the hosts together may then exceed it).
	SharePerMinute int `json:"share_points_per_minute"`
}

// Config is the configuration the daemon runs and the outcome of its last load.
type Config struct {
	Generation int64  `json:"generation"` // increments with every applied config
	Path       string `json:"path"`
	LastReload Reload `json:"last_reload"`
	// Watch is the health of the file watch; a lost watch still sees edits through a 10 s stat check.
	// nil from a daemon that does not report it.
	Watch *Watch `json:"watch,omitempty"`
}

// Watch says whether every file watch the config needs is in place, and if not, why.
type Watch struct {
	Healthy bool   `json:"healthy"`
	Error   string `json:"error,omitempty"`
}

// Reload is the outcome of the last load. After a failure the previous generation keeps running.
type Reload struct {
	OK    bool      `json:"ok"`
	At    time.Time `json:"at,omitzero"`
	Error []string  `json:"error,omitempty"` // one "file:line:col: message" per problem
}

// Target is one configured target and its loop's view of demand and capacity.
type Target struct {
	Name       string    `json:"name"`
	Scope      string    `json:"scope"`             // "repo:owner/name", "org:name" or "enterprise:slug", after "account:<name>/" for an [[account]]'s
	Account    string    `json:"account,omitempty"` // the [[account]] serving it; absent for [github]
	Mode       string    `json:"mode"`              // autoscale or monitor
	Enabled    bool      `json:"enabled"`
	Demand     int       `json:"demand"`   // queued jobs this target's runners could take
	Owned      int       `json:"owned"`    // runners this host has for the target, in any live state
	Starting   int       `json:"starting"` // owned runners not yet online (planned, registered, started)
	Busy       int       `json:"busy"`
	Idle       int       `json:"idle"`
	MaxRunners int       `json:"max_runners"`
	Draining   bool      `json:"draining,omitempty"` // removed or changed: finishing its busy runners
	Backoff    Backoff   `json:"backoff"`
	LastError  string    `json:"last_error,omitempty"`
	Warning    string    `json:"warning,omitempty"`   // served in part: the repositories whose jobs cannot be read, and why
	LastPass   time.Time `json:"last_pass,omitzero"`  // end of the loop's latest reconcile pass
	ScaleSet   *ScaleSet `json:"scale_set,omitempty"` // for a target that takes demand from a scale set
	// Failures counts the runners given up on since the daemon started, by reason
	// (registration_timed_out, launch_failed, out_of_memory, max_job_duration, ghost).
	Failures map[string]int `json:"failures,omitempty"`
	// LastFailure is the target's latest failed or stopped attempt whose logs were kept.
	LastFailure *Failure `json:"last_failure,omitempty"`
	// Schedule is what the target's [[target.schedule]] puts in force now; nil without one.
	Schedule *Schedule `json:"schedule,omitempty"`
	// QueueLatency is how long the target's latest jobs waited from queued to in progress
	// (absent until one job was seen since the daemon started).
	QueueLatency *Latency `json:"queue_latency,omitempty"`
}

// Latency summarises the queued-to-in-progress waits of a target's latest jobs (at most 100).
type Latency struct {
	Jobs       int     `json:"jobs"`
	P50Seconds float64 `json:"p50_seconds"`
	P95Seconds float64 `json:"p95_seconds"`
}

// ScaleSet is a scale-set target's listener: its set, its message session and the queue's counts.
type ScaleSet struct {
	Name    string `json:"name"`
	ID      int64  `json:"id,omitempty"` // GitHub's id, once the set is created or found
	Session string `json:"session"`      // opening, open, or waiting (another session holds the set)
	// Waiting says why the session cannot be opened yet (409: another host, or a stale session of
	// a run of this host killed before it journaled its session id).
	Waiting       string `json:"waiting,omitempty"`
	LastError     string `json:"last_error,omitempty"`
	AssignedJobs  int    `json:"assigned_jobs"`  // waiting + running, GitHub's totalAssignedJobs
	RunningJobs   int    `json:"running_jobs"`   // totalRunningJobs
	AvailableJobs int    `json:"available_jobs"` // queued for the set but held back (capacity, or GHES before acquire)
}

// Backoff says whether a target's loop is waiting before its next GitHub call, until when, and why.
type Backoff struct {
	Active bool      `json:"active"`
	Until  time.Time `json:"until,omitzero"`
	Reason string    `json:"reason,omitempty"`
}

// Runner is one runner this host owns.
type Runner struct {
	ID        int64     `json:"id,omitempty"` // GitHub's runner id, once registered
	Name      string    `json:"name"`
	Target    string    `json:"target"`
	State     string    `json:"state"` // journal state: planned, registered, started, busy, exited, ...
	StartedAt time.Time `json:"started_at,omitzero"`
	JobID     int64     `json:"job_id,omitempty"`
	JobName   string    `json:"job_name,omitempty"`
}

// Event is one operator-visible happening: a runner failing to start, a reload rejected, a backoff.
type Event struct {
	At      time.Time `json:"at"`
	Target  string    `json:"target,omitempty"`
	Attempt string    `json:"attempt,omitempty"` // the runner attempt it concerns, if any
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
}

// RunnerList is the document served at GET /v1/runners.
type RunnerList struct {
	Runners []Runner `json:"runners"`
}
