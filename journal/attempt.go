package journal

import (
	"errors"
	"slices"
	"time"
)

// State is where a runner attempt is in its lifecycle (DESIGN.md, "Runner lifecycle").
// A state is written, synced, before the side effect that follows it, so after a crash the state
// says which side effects may have happened and recovery redoes or undoes them idempotently.
type State string

const (
	StatePlanned      State = "planned"      // slot leased, runner name fixed; JIT not yet known to have been issued
	StateRegistered   State = "registered"   // JIT issued, runner id known; process not yet known to run
	StateStarted      State = "started"      // shim pid + start time known; runner idle or coming online
	StateBusy         State = "busy"         // runner took a job; never killed, unless past max_job_duration or a ghost (failed first)
	StateExited       State = "exited"       // runner process ended; exit status read from the shim
	StateDeregistered State = "deregistered" // GitHub registration removed (or confirmed gone)
	StateCleaned      State = "cleaned"      // runtime directory removed; terminal, slot released
	StateFailed       State = "failed"       // gave up with Reason; cleanup (deregister, remove dir) still owed
)

// legal lists the transitions the journal accepts; anything else is ErrIllegalTransition.
var legal = map[State][]State{
	StatePlanned:      {StateRegistered, StateFailed, StateCleaned},
	StateRegistered:   {StateStarted, StateDeregistered, StateFailed},
	StateStarted:      {StateBusy, StateExited, StateDeregistered, StateFailed},
	StateBusy:         {StateExited, StateFailed},
	StateExited:       {StateDeregistered, StateCleaned, StateFailed},
	StateDeregistered: {StateExited, StateCleaned, StateFailed},
	StateFailed:       {StateDeregistered, StateCleaned},
	StateCleaned:      nil,
}

// CanTransition reports whether from -> to is a legal lifecycle step.
func CanTransition(from, to State) bool {
	for _, s := range legal[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Terminal reports whether an attempt in s owes nothing more and no longer holds a slot.
func (s State) Terminal() bool { return s == StateCleaned }

// Attempt is one try at running one ephemeral runner. Its ID is unique across hosts (host id +
// sequence) and the runner's GitHub name is "runner-manager-<ID>", so a registration made just before
// a crash can be found by name even if its runner id was never journaled.
type Attempt struct {
	ID         string   `json:"id"`
	Target     string   `json:"target"`      // config target name
	Policy     string   `json:"policy"`      // fingerprint of the launch-relevant policy (labels, group, version, env)
	Slot       int      `json:"slot"`        // host-wide slot index, 0 <= Slot < host max at lease time
	RunnerName string   `json:"runner_name"` // "runner-manager-<ID>"
	RunnerID   int64    `json:"runner_id,omitempty"`
	Labels     []string `json:"labels,omitempty"`
	RuntimeDir string   `json:"runtime_dir,omitempty"`
	WorkDir    string   `json:"work_dir,omitempty"` // the attempt's own work directory outside RuntimeDir, removed with it; "" when none
	// Cgroup is the runner's cgroup v2 directory, journaled in the registered record before Start
	// creates it and removed (every process in it killed) before cleaned; "" on a host without
	// usable cgroups, where the slot's uid is killed instead (docs/runner-processes.md).
	Cgroup string `json:"cgroup,omitempty"`
	// Container is the name of the runner's container (executor = "container"), journaled in the
	// registered record before Start creates it; its init's pid is ShimPID. "" for a host runner.
	Container string    `json:"container,omitempty"`
	ShimPID   int       `json:"shim_pid,omitempty"`
	ShimStart uint64    `json:"shim_start,omitempty"` // process start time as the OS reports it (Linux: clock ticks since boot)
	JobID     int64     `json:"job_id,omitempty"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	State     State     `json:"state"`
	Reason    string    `json:"reason,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Updated returns a copy of a with update applied (nil: an unchanged copy), for Transition and for
// the engine's in-memory fake of it (engine/enginetest): update must not change ID, Target, Slot,
// RunnerName, CreatedAt or State, and an update that does is refused as a bug in the caller.
func (a Attempt) Updated(update func(*Attempt)) (Attempt, error) {
	next := a
	next.Labels = slices.Clone(a.Labels)
	if update != nil {
		update(&next)
	}
	if next.ID != a.ID || next.Target != a.Target || next.Slot != a.Slot ||
		next.RunnerName != a.RunnerName || !next.CreatedAt.Equal(a.CreatedAt) || next.State != a.State {
		return Attempt{}, errors.New("update changed an identity field (id, target, slot, runner name, created, state): a bug in the caller")
	}
	return next, nil
}

// RunnerNamePrefix is prepended to the attempt id to form the GitHub runner name.
const RunnerNamePrefix = "runner-manager-"

// PlanRequest asks for a new attempt. The journal leases a slot only if, counting every
// non-terminal attempt it holds, neither the host-wide nor the target's limit would be exceeded:
// it is the single allocation point for capacity, across loops and restarts.
type PlanRequest struct {
	Target    string
	Policy    string
	Labels    []string
	HostMax   int
	TargetMax int
}

var (
	// ErrNoCapacity: the host-wide or per-target limit is reached; nothing was written.
	ErrNoCapacity = errors.New("no free runner slot")
	// ErrIllegalTransition: the requested state change is not in the lifecycle.
	ErrIllegalTransition = errors.New("illegal state transition")
	// ErrNotFound: no attempt with that id.
	ErrNotFound = errors.New("attempt not found")
	// ErrLocked: another process holds the journal.
	ErrLocked = errors.New("journal is held by another process")
)
