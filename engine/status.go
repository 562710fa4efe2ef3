package engine

import (
	"maps"
	"sort"
	"sync"
	"time"
)

// Status is a snapshot for `runner-manager status` and metrics.
type Status struct {
	Generation int64          `json:"generation"`
	LastReload ReloadResult   `json:"last_reload"`
	Draining   string         `json:"draining,omitempty"` // "", "upgrade", "shutdown"
	Targets    []TargetStatus `json:"targets"`
	Events     []Event        `json:"events"`
}

// ReloadResult is the outcome of the last Apply or rejected reload.
type ReloadResult struct {
	Time   time.Time `json:"time"`
	OK     bool      `json:"ok"`
	Error  string    `json:"error,omitempty"`
	Report *Report   `json:"report,omitempty"`
}

// TargetStatus is one loop's view after its latest pass.
type TargetStatus struct {
	Name         string    `json:"name"`
	Identity     string    `json:"identity"`
	Mode         string    `json:"mode"`
	Draining     bool      `json:"draining"`
	Demand       int       `json:"demand"`
	Owned        int       `json:"owned"`
	Starting     int       `json:"starting"`
	Busy         int       `json:"busy"`
	Idle         int       `json:"idle"`
	Backoff      string    `json:"backoff,omitempty"` // error class while backing off
	BackoffUntil time.Time `json:"backoff_until,omitzero"`
	LastError    string    `json:"last_error,omitempty"`
	Warning      string    `json:"warning,omitempty"` // demand read in part: the repositories skipped and why
	// Failures counts the runners given up on since the daemon started, by reason
	// (ReasonRegistrationTimedOut, ReasonLaunchFailed, ReasonMaxJobDuration, ReasonGhost).
	Failures map[string]int `json:"failures,omitempty"`
	LastPass time.Time      `json:"last_pass,omitzero"`
}

type targetStatusBox struct {
	mu sync.Mutex
	st TargetStatus
}

func (b *targetStatusBox) set(f func(*TargetStatus)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.st)
}

func (b *targetStatusBox) get() TargetStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.st
	st.Failures = maps.Clone(b.st.Failures)
	return st
}

// Status returns a consistent-enough snapshot: each target's fields come from one pass.
func (s *Supervisor) Status() Status {
	s.mu.Lock()
	st := Status{Generation: s.gen, LastReload: s.lastReload, Draining: s.drainMode()}
	for _, l := range s.loops {
		st.Targets = append(st.Targets, l.status.get())
	}
	s.mu.Unlock()
	sort.Slice(st.Targets, func(i, j int) bool {
		if st.Targets[i].Name != st.Targets[j].Name {
			return st.Targets[i].Name < st.Targets[j].Name
		}
		return st.Targets[i].Identity < st.Targets[j].Identity
	})
	st.Events = s.events.recent()
	return st
}
