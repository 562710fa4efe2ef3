package engine

import (
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// JobEvent is one workflow_job delivery for a target: what changed for one job. internal/webhook
// verifies and parses it; the daemon routes it (Deliver).
type JobEvent struct {
	Action string // "queued", "in_progress" or "completed"; other actions are ignored
	Job    Job    // Job.Runner names the runner once in_progress or completed
}

// startedTTL is how long a job seen in progress or completed is remembered, so a redelivery of its
// queued event (GitHub's retries, a manual redelivery) is not taken for demand. The webhook
// package drops repeated delivery ids for as long.
const startedTTL = 6 * time.Hour

// Deliver hands a workflow_job delivery to the current loop of each named target (the targets
// its repository and labels match, in config order), without blocking. A queued job is demand for
// one target only, the first whose last pass left it room (else the first), so overlapping targets
// do not each start a runner for it; in_progress and completed update every target's view. The
// loop acts in a light pass that reads nothing from GitHub (pass), and its slow poll reconciles
// what deliveries said, so a lost delivery costs latency and never a job.
func (s *Supervisor) Deliver(ev JobEvent, targets []string) {
	s.mu.Lock()
	var loops []*loop
	cfg := s.cfg.Load()
	for _, name := range targets {
		for k, l := range s.loops {
			if k.name != name || cfg == nil {
				continue
			}
			if t, ok := cfg.Target(name); ok && t.Identity() == k.identity {
				loops = append(loops, l)
			}
		}
	}
	s.mu.Unlock()
	if ev.Action == "queued" && len(loops) > 1 {
		pick := loops[0]
		for _, l := range loops {
			if l.hasRoom(cfg) {
				pick = l
				break
			}
		}
		loops = []*loop{pick}
	}
	now := s.clock.Now()
	prefix := journal.RunnerNamePrefix + s.opts.HostID + "-"
	for _, l := range loops {
		if l.book.deliver(ev, now, prefix) {
			l.nudge()
		}
	}
}

// hasRoom reports whether the target has room for one more runner (journal.Room: the host's and
// the target's bounds and the fair share) on the slot leases the last pass of any loop read, or
// startup recovery's read before the first pass (Run).
func (l *loop) hasRoom(cfg *config.Config) bool {
	t, ok := cfg.Target(l.key.name)
	r := l.sup.rooms.Load()
	if !ok || r == nil {
		return false // no target, or no Run yet (no loop runs before it)
	}
	_, host := l.sup.room(cfg, *r, t, l.sup.claims.wantOf(t.Name)+1)
	return host > 0
}

// jobBook is one loop's knowledge of its target's jobs between polls: the queued ones (from the
// last poll and deliveries since), the ones seen started, and what deliveries said of this host's
// runners. Deliver writes it from the webhook's goroutine; the loop reads it in each pass.
type jobBook struct {
	mu      sync.Mutex
	queued  map[int64]bookJob   // queued, not seen started
	started map[int64]time.Time // seen in progress or completed, when learnt
	took    map[string]int64    // this host's runner name -> the job an in_progress delivery gave it
	done    map[string]bool     // this host's runner names whose job completed (GitHub removed the ephemeral registration)
}

type bookJob struct {
	job Job
	at  time.Time // when it was learnt: a poll read before then cannot have seen it
}

func newJobBook() *jobBook {
	return &jobBook{queued: map[int64]bookJob{}, started: map[int64]time.Time{}, took: map[string]int64{}, done: map[string]bool{}}
}

// deliver records ev, learnt at now, and reports whether the loop should pass now: a new queued
// job, or news of one of this host's runners (its name starts with ours).
func (b *jobBook) deliver(ev JobEvent, now time.Time, ours string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	j := ev.Job
	switch ev.Action {
	case "queued":
		if _, seen := b.started[j.ID]; seen {
			return false // a redelivery after the job started
		}
		if _, dup := b.queued[j.ID]; dup {
			return false
		}
		j.Runner = ""
		b.queued[j.ID] = bookJob{job: j, at: now}
		return true
	case "in_progress", "completed":
		delete(b.queued, j.ID)
		b.started[j.ID] = now
		if !strings.HasPrefix(j.Runner, ours) {
			return false // another host's or GitHub's runner: only the demand shrank
		}
		if ev.Action == "in_progress" {
			b.took[j.Runner] = j.ID
		} else {
			b.done[j.Runner] = true
		}
		return true
	}
	return false
}

// polled reconciles the book with a poll of the target's jobs, read from readAt on. The poll is
// the truth for what GitHub had queued then: a queued job it does not list was taken or cancelled,
// unless a delivery told of it after the read began. complete is false when the poll read only part
// of the target (some repositories refused): then nothing is dropped.
func (b *jobBook) polled(jobs []Job, readAt time.Time, complete bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, at := range b.started {
		if readAt.Sub(at) >= startedTTL {
			delete(b.started, id)
		}
	}
	next := make(map[int64]bookJob, len(jobs))
	for _, j := range jobs {
		if j.Runner != "" {
			b.started[j.ID] = readAt
			continue
		}
		if _, seen := b.started[j.ID]; !seen {
			next[j.ID] = bookJob{job: j, at: readAt}
		}
	}
	for id, q := range b.queued {
		if _, ok := next[id]; !ok && (!complete || !q.at.Before(readAt)) {
			next[id] = q
		}
	}
	b.queued = next
}

// stillQueued is those of jobs (a fleet's view, read elsewhere and maybe earlier) that are still
// queued as far as this host knows: not running (Job.Runner) and not seen started since.
func (b *jobBook) stillQueued(jobs []Job) []Job {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Job
	for _, j := range jobs {
		if _, seen := b.started[j.ID]; !seen && j.Runner == "" {
			out = append(out, j)
		}
	}
	return out
}

// view returns the queued jobs, oldest first, and what deliveries said of this host's runners.
func (b *jobBook) view() (jobs []Job, took map[string]int64, done map[string]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, q := range b.queued {
		jobs = append(jobs, q.job)
	}
	sort.Slice(jobs, func(i, k int) bool {
		if !jobs[i].QueuedAt.Equal(jobs[k].QueuedAt) {
			return jobs[i].QueuedAt.Before(jobs[k].QueuedAt)
		}
		return jobs[i].ID < jobs[k].ID
	})
	return jobs, maps.Clone(b.took), maps.Clone(b.done)
}

// keep forgets what deliveries said of runners that are no longer live attempts of the loop.
func (b *jobBook) keep(live map[string]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	maps.DeleteFunc(b.took, func(n string, _ int64) bool { return !live[n] })
	maps.DeleteFunc(b.done, func(n string, _ bool) bool { return !live[n] })
}
