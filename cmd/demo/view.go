package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// event is one line of the live view.
type event struct {
	At   time.Time
	Kind string // queued, runner, running, done, gone
	Text string
}

func (e event) String() string {
	return fmt.Sprintf("%s  %-8s %s", e.At.Local().Format("15:04:05"), e.Kind, e.Text)
}

// tracker turns successive simulator snapshots into events and keeps what the summary needs.
// It is fed from one goroutine.
type tracker struct {
	jobs    map[int64]ghsim.Job
	regs    map[string]ghsim.Registration // by runner name (the simulator refuses duplicate names)
	peak    int                           // most runners registered at once
	started int                           // registrations seen
}

func newTracker() *tracker {
	return &tracker{jobs: map[int64]ghsim.Job{}, regs: map[string]ghsim.Registration{}}
}

// observe compares s with the last snapshot and returns what changed, oldest first. Times come
// from the simulator's records where it keeps them; now stands in for the rest.
func (t *tracker) observe(s snapshot, now time.Time) []event {
	var evs []event
	for _, r := range s.Registrations {
		old, seen := t.regs[r.Name]
		t.regs[r.Name] = r
		if !seen {
			t.started++
			evs = append(evs, event{r.RegisteredAt, "runner", fmt.Sprintf("%s registered for %s [%s]", r.Name, r.Scope, strings.Join(r.Labels, " "))})
		}
		if r.Online && !old.Online {
			evs = append(evs, event{now, "runner", r.Name + " online"})
		}
		if !r.RemovedAt.IsZero() && old.RemovedAt.IsZero() {
			why := "deregistered by runner-manager"
			if r.RemovedBy == "ephemeral" {
				why = "removed after its job (ephemeral)"
			}
			evs = append(evs, event{r.RemovedAt, "gone", r.Name + " " + why})
		}
	}
	for _, j := range s.Jobs {
		old, seen := t.jobs[j.ID]
		t.jobs[j.ID] = j
		if !seen {
			evs = append(evs, event{j.CreatedAt, "queued", fmt.Sprintf("%s [%s]", jobRef(j), strings.Join(j.Labels, " "))})
		}
		if j.Status != ghsim.StatusQueued && !j.StartedAt.IsZero() && old.StartedAt.IsZero() {
			evs = append(evs, event{j.StartedAt, "running", fmt.Sprintf("%s on %s (picked up after %s)",
				jobRef(j), j.RunnerName, roundDur(j.StartedAt.Sub(j.CreatedAt)))})
		}
		if j.Status == ghsim.StatusCompleted && old.Status != ghsim.StatusCompleted {
			ran := ""
			if !j.StartedAt.IsZero() {
				ran = fmt.Sprintf(" (ran %s)", roundDur(j.CompletedAt.Sub(j.StartedAt)))
			}
			evs = append(evs, event{j.CompletedAt, "done", fmt.Sprintf("%s %s%s", jobRef(j), cmp.Or(j.Conclusion, "completed"), ran)})
		}
	}
	t.peak = max(t.peak, len(s.Runners))
	slices.SortStableFunc(evs, func(a, b event) int { return a.At.Compare(b.At) })
	return evs
}

// done reports whether every one of ids has completed.
func (t *tracker) done(ids []int64) bool {
	for _, id := range ids {
		if t.jobs[id].Status != ghsim.StatusCompleted {
			return false
		}
	}
	return true
}

func jobRef(j ghsim.Job) string { return fmt.Sprintf("%s #%d", j.Repo, j.ID) }

// roundDur prints a duration in seconds to a tenth: enough for a human watching seconds pass, and
// one format for every figure ("0.3s", "12.0s").
func roundDur(d time.Duration) string {
	return fmt.Sprintf("%.1fs", max(d, 0).Seconds())
}
