package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"
)

// Filter selects attempts for List. Zero fields match everything.
type Filter struct {
	Target string  // only this target
	States []State // only these states
}

func (f Filter) match(a Attempt) bool {
	if f.Target != "" && a.Target != f.Target {
		return false
	}
	return len(f.States) == 0 || slices.Contains(f.States, a.State)
}

// Plan leases a slot for a new attempt and records it as planned, in one synced batch. It returns
// ErrNoCapacity, writing nothing, if the host already holds HostMax live attempts or the target
// TargetMax (a limit of 0 or less pauses launches): Room.Hard, the one rule of room for a target. The slot is the lowest index in [0, HostMax)
// no live attempt holds. The write lock is held from counting to commit, so concurrent Plans
// (any target loop, recovery) can never together exceed a limit.
func (j *Journal) Plan(ctx context.Context, req PlanRequest) (Attempt, error) {
	if req.Target == "" {
		return Attempt{}, errors.New("plan runner: empty target name (a bug in the caller)")
	}
	unlock, err := j.writer(ctx)
	if err != nil {
		return Attempt{}, fmt.Errorf("plan runner for target %q: %w", req.Target, err)
	}
	defer unlock()

	live, err := j.liveIndex(j.db)
	if err != nil {
		return Attempt{}, err
	}
	room, used := Room{HostMax: req.HostMax, held: make(map[string]int), total: len(live)}, make(map[int]bool, len(live))
	for _, e := range live {
		used[e.Slot] = true
		room.held[e.Target]++
	}
	if room.Hard(req.Target, req.TargetMax) <= 0 {
		return Attempt{}, fmt.Errorf("plan runner for target %q: host has %d/%d, target %d/%d: %w",
			req.Target, room.Total(), req.HostMax, room.Held(req.Target), req.TargetMax, ErrNoCapacity)
	}
	slot := 0
	for used[slot] { // terminates below HostMax: fewer than HostMax slots are in use
		slot++
	}
	seq, err := j.nextSeq()
	if err != nil {
		return Attempt{}, err
	}
	now := j.now().UTC().Round(0)
	id := fmt.Sprintf("%s-%010d", j.hostID, seq)
	a := Attempt{
		ID:         id,
		Target:     req.Target,
		Policy:     req.Policy,
		Slot:       slot,
		RunnerName: RunnerNamePrefix + id,
		Labels:     slices.Clone(req.Labels),
		State:      StatePlanned,
		CreatedAt:  now,
		UpdatedAt:  now,
	}
	b := j.db.NewBatch()
	_ = b.Set(attemptKey(id), encodeAttempt(a), nil)
	_ = b.Set(liveKey(id), encodeLive(a), nil)
	_ = b.Set(keySeq, []byte(strconv.FormatUint(seq, 10)), nil)
	if err := j.commit(b); err != nil {
		return Attempt{}, fmt.Errorf("plan runner for target %q: %w", req.Target, err)
	}
	return a, nil
}

func (j *Journal) nextSeq() (uint64, error) {
	raw, ok, err := j.getRaw(keySeq)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("journal %s: sequence key missing: the journal is damaged; move it aside", j.dir)
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("journal %s: sequence %q unreadable: the journal is damaged; move it aside", j.dir, raw)
	}
	return n + 1, nil
}

// Transition moves attempt id to state to, after applying update (which may set runner id, shim
// pid and start, job id, exit code, reason, runtime dir...) to a copy of the stored attempt, and
// writes it in one synced batch. An illegal step returns ErrIllegalTransition and writes nothing;
// update must not change ID, Target, Slot, RunnerName, CreatedAt or State.
func (j *Journal) Transition(ctx context.Context, id string, to State, update func(*Attempt)) (Attempt, error) {
	unlock, err := j.writer(ctx)
	if err != nil {
		return Attempt{}, fmt.Errorf("record attempt %s as %s: %w", id, to, err)
	}
	defer unlock()

	cur, err := j.get(j.db, id)
	if err != nil {
		return Attempt{}, fmt.Errorf("record attempt %s as %s: %w", id, to, err)
	}
	if !CanTransition(cur.State, to) {
		return Attempt{}, fmt.Errorf("record attempt %s (target %q): %s -> %s: %w", id, cur.Target, cur.State, to, ErrIllegalTransition)
	}
	next, err := cur.Updated(update)
	if err != nil {
		return Attempt{}, fmt.Errorf("record attempt %s as %s: %w", id, to, err)
	}
	next.State = to
	next.UpdatedAt = j.now().UTC().Round(0)

	b := j.db.NewBatch()
	_ = b.Set(attemptKey(id), encodeAttempt(next), nil)
	if to.Terminal() {
		_ = b.Delete(liveKey(id), nil)
	}
	if err := j.commit(b); err != nil {
		return Attempt{}, fmt.Errorf("record attempt %s as %s: %w", id, to, err)
	}
	return next, nil
}

// Get returns the attempt with id, or ErrNotFound.
func (j *Journal) Get(ctx context.Context, id string) (Attempt, error) {
	unlock, err := j.reader(ctx)
	if err != nil {
		return Attempt{}, err
	}
	defer unlock()
	return j.get(j.db, id)
}

// Live returns every non-terminal attempt, sorted by ID (creation order): what recovery walks.
// It reads one consistent snapshot, so a concurrent Transition is seen entirely or not at all.
func (j *Journal) Live(ctx context.Context) ([]Attempt, error) {
	unlock, err := j.reader(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	snap := j.db.NewSnapshot()
	defer snap.Close()
	live, err := j.liveIndex(snap)
	if err != nil {
		return nil, err
	}
	out := make([]Attempt, 0, len(live))
	for _, e := range live {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		a, err := j.get(snap, e.id)
		if err != nil {
			return nil, fmt.Errorf("live index names attempt %s: %w", e.id, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// List returns the attempts matching f, live or not, sorted by ID.
func (j *Journal) List(ctx context.Context, f Filter) ([]Attempt, error) {
	unlock, err := j.reader(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []Attempt
	err = j.scanAttempts(ctx, func(a Attempt) error {
		if f.match(a) {
			out = append(out, a)
		}
		return nil
	})
	return out, err
}

// Count returns how many live (non-terminal) attempts the host holds and how many of them are
// target's. Capacity is always counted host-wide, whichever loop asks.
func (j *Journal) Count(ctx context.Context, target string) (host, tgt int, err error) {
	unlock, err := j.reader(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer unlock()
	live, err := j.liveIndex(j.db)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range live {
		if e.Target == target {
			tgt++
		}
	}
	return len(live), tgt, nil
}

// Prune deletes cleaned attempts last updated before olderThan, in one synced batch, and returns
// how many it deleted. Attempts in any other state, including failed, are kept: they still owe cleanup.
func (j *Journal) Prune(ctx context.Context, olderThan time.Time) (int, error) {
	unlock, err := j.writer(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	b := j.db.NewBatch()
	n := 0
	err = j.scanAttempts(ctx, func(a Attempt) error {
		if a.State == StateCleaned && a.UpdatedAt.Before(olderThan) {
			n++
			return b.Delete(attemptKey(a.ID), nil)
		}
		return nil
	})
	if err != nil || n == 0 {
		_ = b.Close()
		return 0, err
	}
	if err := j.commit(b); err != nil {
		return 0, fmt.Errorf("prune cleaned attempts: %w", err)
	}
	return n, nil
}

// reader is what both *pebble.DB and *pebble.Snapshot offer.
type kvReader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

func (j *Journal) get(r kvReader, id string) (Attempt, error) {
	key := attemptKey(id)
	raw, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return Attempt{}, fmt.Errorf("attempt %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Attempt{}, fmt.Errorf("read journal %s: %w", j.dir, err)
	}
	defer closer.Close()
	return decodeAttempt(key, raw)
}

type liveRef struct {
	id string
	liveEntry
}

// liveIndex reads the live/ index, sorted by attempt id.
func (j *Journal) liveIndex(r kvReader) ([]liveRef, error) {
	var out []liveRef
	err := j.scan(r, prefixLive, func(key, val []byte) error {
		var e liveEntry
		if err := json.Unmarshal(val, &e); err != nil {
			return fmt.Errorf("journal index %s is unreadable: %w", key, err)
		}
		out = append(out, liveRef{id: strings.TrimPrefix(string(key), prefixLive), liveEntry: e})
		return nil
	})
	return out, err
}

func (j *Journal) scanAttempts(ctx context.Context, fn func(Attempt) error) error {
	return j.scan(j.db, prefixAttempt, func(key, val []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		a, err := decodeAttempt(key, val)
		if err != nil {
			return err
		}
		return fn(a)
	})
}

// scan calls fn for every key with prefix p, in key order. key and val are only valid during fn.
func (j *Journal) scan(r kvReader, p string, fn func(key, val []byte) error) error {
	lower, upper := prefixBounds(p)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("read journal %s: %w", j.dir, err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("read journal %s: %w", j.dir, err)
	}
	return nil
}
