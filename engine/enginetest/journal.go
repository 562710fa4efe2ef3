package enginetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/journal"
)

// Journal is an in-memory journal with the pebble journal's rules: Plan leases the lowest free slot
// only within the host and target limits (journal.ErrNoCapacity otherwise), Transition accepts only
// journal.CanTransition steps, cleaned attempts release their slot. Both keep the one contract in
// journal/journaltest (TestJournalContract here, TestContract in journal). It satisfies engine.Journal.
type Journal struct {
	// Now stamps CreatedAt/UpdatedAt; set it to a FakeClock's Now to keep tests on fake time.
	Now func() time.Time
	// Fail, when set, is asked before every operation ("plan", "transition", "live") and its
	// non-nil answer is returned instead, to simulate a failing disk.
	Fail func(op string) error

	mu       sync.Mutex
	hostID   string
	seq      int
	attempts map[string]journal.Attempt
	history  map[string][]journal.State
	maxHost  int
	contact  map[string]time.Time // by account
}

// NewJournal returns an empty journal whose attempt ids are "<hostID>-<n>", n zero-padded to ten
// digits as the journal's.
func NewJournal(hostID string) *Journal {
	return &Journal{Now: time.Now, hostID: hostID, attempts: map[string]journal.Attempt{}, history: map[string][]journal.State{}, contact: map[string]time.Time{}}
}

func (j *Journal) fail(op string) error {
	if j.Fail == nil {
		return nil
	}
	return j.Fail(op)
}

// Plan leases a slot for a new attempt in state planned.
func (j *Journal) Plan(ctx context.Context, req journal.PlanRequest) (journal.Attempt, error) {
	if err := ctx.Err(); err != nil {
		return journal.Attempt{}, err
	}
	if err := j.fail("plan"); err != nil {
		return journal.Attempt{}, err
	}
	if req.Target == "" {
		return journal.Attempt{}, errors.New("plan runner: empty target name (a bug in the caller)")
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	all := make([]journal.Attempt, 0, len(j.attempts))
	used := map[int]bool{}
	for _, a := range j.attempts {
		all = append(all, a)
		if !a.State.Terminal() {
			used[a.Slot] = true
		}
	}
	room := journal.RoomOf(req.HostMax, all) // the journal's own rule (journal.Room)
	if room.Hard(req.Target, req.TargetMax) <= 0 {
		return journal.Attempt{}, journal.ErrNoCapacity
	}
	host := room.Total()
	slot := 0
	for used[slot] {
		slot++
	}
	id := ""
	for id == "" || j.attempts[id].ID != "" { // skip ids a test seeded with Put
		j.seq++
		id = fmt.Sprintf("%s-%010d", j.hostID, j.seq) // as the journal: id order is creation order
	}
	now := j.Now()
	a := journal.Attempt{
		ID: id, Target: req.Target, Policy: req.Policy, Slot: slot,
		RunnerName: journal.RunnerNamePrefix + id, Labels: slices.Clone(req.Labels),
		State: journal.StatePlanned, CreatedAt: now, UpdatedAt: now,
	}
	j.attempts[id] = a
	j.history[id] = []journal.State{journal.StatePlanned}
	if host+1 > j.maxHost {
		j.maxHost = host + 1
	}
	return a, nil
}

// Transition moves an attempt to a new state after applying update to it.
func (j *Journal) Transition(ctx context.Context, id string, to journal.State, update func(*journal.Attempt)) (journal.Attempt, error) {
	if err := ctx.Err(); err != nil {
		return journal.Attempt{}, err
	}
	if err := j.fail("transition"); err != nil {
		return journal.Attempt{}, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	a, ok := j.attempts[id]
	if !ok {
		return journal.Attempt{}, fmt.Errorf("attempt %s: %w", id, journal.ErrNotFound)
	}
	if !journal.CanTransition(a.State, to) {
		return journal.Attempt{}, fmt.Errorf("attempt %s %s -> %s: %w", id, a.State, to, journal.ErrIllegalTransition)
	}
	a, err := a.Updated(update)
	if err != nil {
		return journal.Attempt{}, fmt.Errorf("record attempt %s as %s: %w", id, to, err)
	}
	a.State, a.UpdatedAt = to, j.Now()
	j.attempts[id] = a
	j.history[id] = append(j.history[id], to)
	return a, nil
}

// Get returns one attempt.
func (j *Journal) Get(_ context.Context, id string) (journal.Attempt, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	a, ok := j.attempts[id]
	if !ok {
		return journal.Attempt{}, fmt.Errorf("attempt %s: %w", id, journal.ErrNotFound)
	}
	return a, nil
}

// Live returns every non-terminal attempt, ordered by id.
func (j *Journal) Live(ctx context.Context) ([]journal.Attempt, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := j.fail("live"); err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []journal.Attempt
	for _, a := range j.attempts {
		if !a.State.Terminal() {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].ID < out[k].ID })
	return out, nil
}

// All returns every attempt, terminal ones included, ordered by id.
func (j *Journal) All() []journal.Attempt {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []journal.Attempt
	for _, a := range j.attempts {
		out = append(out, a)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].ID < out[k].ID })
	return out
}

// History returns the states an attempt went through, in order.
func (j *Journal) History(id string) []journal.State {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.history[id])
}

// Put stores an attempt as is, to seed a test with the state a crashed daemon left behind.
func (j *Journal) Put(a journal.Attempt) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.attempts[a.ID] = a
	j.history[a.ID] = append(j.history[a.ID], a.State)
}

// MaxHostLive is the highest number of simultaneously non-terminal attempts Plan ever allowed.
func (j *Journal) MaxHostLive() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.maxHost
}

// RecordGitHubContact keeps the newest time it is given for account.
func (j *Journal) RecordGitHubContact(_ context.Context, account string, t time.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if t.After(j.contact[account]) {
		j.contact[account] = t
	}
	return nil
}

// LastGitHubContact returns the newest recorded contact of any account, as the journal's host-wide one.
func (j *Journal) LastGitHubContact() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	var last time.Time
	for _, t := range j.contact {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// GitHubContactOf returns account's newest recorded contact (zero: none).
func (j *Journal) GitHubContactOf(account string) time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.contact[account]
}
