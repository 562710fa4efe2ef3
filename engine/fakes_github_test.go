package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

func (w *world) Queued(ctx context.Context, t config.Target) ([]Job, error) {
	if err := w.call("Queued", t); err != nil {
		return nil, err
	}
	w.mu.Lock()
	ch, late := w.block[t.Identity()], w.late[t.Identity()]
	w.mu.Unlock()
	if late {
		<-ctx.Done() // the read took the pass's whole call timeout, and then answered
	}
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	jobs := make([]Job, w.queued[t.Identity()])
	for i := range jobs {
		jobs[i] = Job{ID: int64(i + 1), Labels: t.Labels}
		if at, ok := w.since[t.Identity()]; ok {
			jobs[i].QueuedAt = at.Add(time.Duration(i) * time.Second)
		}
	}
	for _, r := range w.sortedRegs() { // in progress: job 9000+runner id
		if r.identity == t.Identity() && r.busy {
			jobs = append(jobs, Job{ID: 9000 + r.id, Labels: t.Labels, Runner: r.name})
		}
	}
	return jobs, w.partial[t.Identity()]
}

func (w *world) JITConfig(ctx context.Context, t config.Target, req JITRequest) (Registration, error) {
	if err := w.call("JITConfig", t); err != nil {
		return Registration{}, err
	}
	w.mu.Lock()
	gate, unsent := w.jitGate, w.jitUnsent
	w.mu.Unlock()
	if gate != nil {
		w.jitEntered <- req.Name
		select {
		case <-gate:
		case <-ctx.Done():
			if unsent {
				return Registration{}, fmt.Errorf("waiting for the request governor: %w: %w", ErrNotSent, ctx.Err())
			}
			return Registration{}, ctx.Err()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextID++
	w.regs[w.nextID] = &ghRunner{id: w.nextID, name: req.Name, identity: t.Identity()}
	if w.nameTaken[req.Name] {
		// The first try landed but its answer was lost; the client's retry gets 409.
		return Registration{}, fmt.Errorf("register %s: GitHub refused (409): %w", req.Name, ErrRunnerNameTaken)
	}
	return Registration{RunnerID: w.nextID, JITConfig: "SECRET-jit-" + req.Name}, nil
}

func (w *world) Runners(ctx context.Context, t config.Target) ([]Runner, error) {
	if err := w.call("Runners", t); err != nil {
		return nil, err
	}
	if err := w.hung(ctx, "Runners", t); err != nil {
		return nil, err
	}
	w.mu.Lock()
	after := w.afterList
	w.mu.Unlock()
	if after != nil {
		defer after()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Runner
	for _, r := range w.regs {
		if r.identity == t.Identity() {
			out = append(out, Runner{ID: r.id, Name: r.name, Busy: r.busy && !w.hideBusy, Online: !w.offlineLocked(r.name)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (w *world) DeleteRunner(ctx context.Context, t config.Target, id int64) error {
	if err := w.call("DeleteRunner", t); err != nil {
		return err
	}
	if err := w.hung(ctx, "DeleteRunner", t); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.regs[id]
	if !ok || r.identity != t.Identity() {
		return nil
	}
	if r.busy {
		return ErrRunnerBusy
	}
	delete(w.regs, id)
	return nil
}

func (w *world) offlineLocked(name string) bool { return w.allOffline || w.offline[name] }

// forgetRunners removes identity's busy registrations while their processes live on: a runner
// that keeps running after its job completed, or whose registration was deleted under it.
func (w *world) forgetRunners(identity string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for id, r := range w.regs {
		if r.identity == identity && r.busy {
			delete(w.regs, id)
			n++
		}
	}
	return n
}

// takeJobs lets GitHub hand queued jobs of identity to idle online runners; returns how many.
func (w *world) takeJobs(identity string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, r := range w.sortedRegs() {
		if w.queued[identity] == 0 {
			break
		}
		if r.identity != identity || r.busy || !w.aliveNameLocked(r.name) || w.offlineLocked(r.name) {
			continue
		}
		r.busy = true
		w.queued[identity]--
		n++
	}
	return n
}

// takeJobsUnseen has every registration take a job that GitHub's runner list does not show yet
// (it still lists them idle): a reap that follows finds the delete answered busy.
func (w *world) takeJobsUnseen() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.regs {
		r.busy = true
	}
	w.hideBusy = true
}

func (w *world) sortedRegs() []*ghRunner {
	out := make([]*ghRunner, 0, len(w.regs))
	for _, r := range w.regs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// finishJobs completes every running job of identity: the ephemeral runner is removed by GitHub
// and its process exits 0, as a real JIT runner does.
func (w *world) finishJobs(identity string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for id, r := range w.regs {
		if r.identity != identity || !r.busy {
			continue
		}
		delete(w.regs, id)
		for _, fp := range w.procs {
			if fp.name == r.name {
				w.endLocked(fp, 0)
			}
		}
		n++
	}
	return n
}

func (w *world) setQueued(identity string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queued[identity] = n
}

// blockQueued makes Queued for identity block until the returned channel is closed (or its
// context ends).
func (w *world) blockQueued(identity string) chan struct{} {
	block := make(chan struct{})
	w.mu.Lock()
	w.block[identity] = block
	w.mu.Unlock()
	return block
}

func (w *world) setFail(identity string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fail[identity] = err
}

// rateLimitErr, authErr: errors shaped like internal/github's, classified by method.
type rateLimitErr struct{ at time.Time }

func (e rateLimitErr) Error() string         { return "rate limited until " + e.at.Format(time.RFC3339) }
func (e rateLimitErr) RetryAfter() time.Time { return e.at }

type authErr struct{}

func (authErr) Error() string      { return "401 bad credentials" }
func (authErr) Unauthorized() bool { return true }

var errOffline = errors.New("dial tcp: connection refused")
