// Package journaltest is the journal's contract: the rules every store of runner attempts must
// keep, as one test suite. It runs against the pebble journal (journal's tests) and against
// enginetest's in-memory fake (enginetest's tests), so the fake the engine is tested with cannot
// drift from the rules the daemon runs with (Nomad runs its state-store tests against both stores
// the same way).
package journaltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/clocktest"
	"github.com/runner-manager/runner-manager/journal"
)

// Store is what the contract covers: the engine's view of the journal plus Get.
type Store interface {
	Plan(ctx context.Context, req journal.PlanRequest) (journal.Attempt, error)
	Transition(ctx context.Context, id string, to journal.State, update func(*journal.Attempt)) (journal.Attempt, error)
	Get(ctx context.Context, id string) (journal.Attempt, error)
	Live(ctx context.Context) ([]journal.Attempt, error)
}

// Open returns a new, empty store whose clock is now. It registers its own cleanup.
type Open func(t *testing.T, now func() time.Time) Store

// Lifecycle is DESIGN.md's runner lifecycle written out independently of journal's table, so a
// change to either shows up here.
var Lifecycle = map[[2]journal.State]bool{
	{journal.StatePlanned, journal.StateRegistered}:      true,
	{journal.StatePlanned, journal.StateFailed}:          true,
	{journal.StatePlanned, journal.StateCleaned}:         true,
	{journal.StateRegistered, journal.StateStarted}:      true,
	{journal.StateRegistered, journal.StateDeregistered}: true,
	{journal.StateRegistered, journal.StateFailed}:       true,
	{journal.StateStarted, journal.StateBusy}:            true,
	{journal.StateStarted, journal.StateExited}:          true,
	{journal.StateStarted, journal.StateDeregistered}:    true,
	{journal.StateStarted, journal.StateFailed}:          true,
	{journal.StateBusy, journal.StateExited}:             true,
	{journal.StateBusy, journal.StateFailed}:             true,
	{journal.StateExited, journal.StateDeregistered}:     true,
	{journal.StateExited, journal.StateCleaned}:          true,
	{journal.StateExited, journal.StateFailed}:           true,
	{journal.StateDeregistered, journal.StateExited}:     true,
	{journal.StateDeregistered, journal.StateCleaned}:    true,
	{journal.StateDeregistered, journal.StateFailed}:     true,
	{journal.StateFailed, journal.StateDeregistered}:     true,
	{journal.StateFailed, journal.StateCleaned}:          true,
}

// AllStates lists every lifecycle state.
var AllStates = []journal.State{journal.StatePlanned, journal.StateRegistered, journal.StateStarted, journal.StateBusy,
	journal.StateExited, journal.StateDeregistered, journal.StateCleaned, journal.StateFailed}

// pathTo is a legal route from planned to each state.
var pathTo = map[journal.State][]journal.State{
	journal.StatePlanned:      nil,
	journal.StateRegistered:   {journal.StateRegistered},
	journal.StateStarted:      {journal.StateRegistered, journal.StateStarted},
	journal.StateBusy:         {journal.StateRegistered, journal.StateStarted, journal.StateBusy},
	journal.StateExited:       {journal.StateRegistered, journal.StateStarted, journal.StateExited},
	journal.StateDeregistered: {journal.StateRegistered, journal.StateDeregistered},
	journal.StateCleaned:      {journal.StateCleaned},
	journal.StateFailed:       {journal.StateFailed},
}

// Run runs the whole contract, each rule a subtest with a fresh store.
func Run(t *testing.T, open Open) {
	rules := []struct {
		name string
		test func(t *testing.T, s Store, clk *clocktest.Clock)
	}{
		{"PlanRefusesBeyondHostAndTargetLimits", planLimits},
		{"PlanTakesTheLowestFreeSlot", lowestFreeSlot},
		{"PlanRefusesAnEmptyTarget", emptyTarget},
		{"AttemptIdentity", identity},
		{"TransitionTable", transitionTable},
		{"TransitionRecordsFieldsAndTime", recordsFields},
		{"TransitionProtectsIdentityFields", protectsIdentity},
		{"UnknownAttempt", unknown},
		{"LiveIsNonTerminalInCreationOrder", liveOrder},
		{"CancelledContext", cancelled},
		{"ConcurrentPlansNeverExceedLimits", concurrentPlans},
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			clk := clocktest.New(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
			r.test(t, open(t, clk.Now), clk)
		})
	}
}

func plan(t *testing.T, s Store, target string) journal.Attempt {
	t.Helper()
	a, err := s.Plan(context.Background(), journal.PlanRequest{Target: target, Policy: "p1", Labels: []string{"linux"}, HostMax: 100, TargetMax: 100})
	if err != nil {
		t.Fatalf("Plan(%s): %v", target, err)
	}
	return a
}

func liveCount(t *testing.T, s Store) int {
	t.Helper()
	live, err := s.Live(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(live)
}

// A refused Plan returns ErrNoCapacity and writes nothing; a limit of 0 pauses a target.
func planLimits(t *testing.T, s Store, _ *clocktest.Clock) {
	ctx := context.Background()
	for _, target := range []string{"a", "a", "b"} {
		if _, err := s.Plan(ctx, journal.PlanRequest{Target: target, HostMax: 3, TargetMax: 2}); err != nil {
			t.Fatalf("Plan(%s): %v", target, err)
		}
	}
	for name, req := range map[string]journal.PlanRequest{
		"host limit":    {Target: "c", HostMax: 3, TargetMax: 2},
		"target limit":  {Target: "a", HostMax: 10, TargetMax: 2},
		"paused target": {Target: "d", HostMax: 10, TargetMax: 0},
		"paused host":   {Target: "d", HostMax: 0, TargetMax: 10},
	} {
		if _, err := s.Plan(ctx, req); !errors.Is(err, journal.ErrNoCapacity) {
			t.Errorf("%s: Plan = %v, want ErrNoCapacity", name, err)
		}
	}
	if n := liveCount(t, s); n != 3 {
		t.Errorf("%d live attempts after refusals, want 3: a refused Plan wrote something", n)
	}
}

// Slots are the lowest free index; failed keeps its slot (cleanup is still owed), cleaned frees it.
func lowestFreeSlot(t *testing.T, s Store, _ *clocktest.Clock) {
	ctx := context.Background()
	req := journal.PlanRequest{Target: "t", HostMax: 3, TargetMax: 3}
	var got []journal.Attempt
	for i := range 3 {
		a, err := s.Plan(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if a.Slot != i {
			t.Fatalf("plan %d got slot %d, want %d", i, a.Slot, i)
		}
		got = append(got, a)
	}
	if _, err := s.Transition(ctx, got[0].ID, journal.StateFailed, func(a *journal.Attempt) { a.Reason = "jit refused" }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Plan(ctx, req); !errors.Is(err, journal.ErrNoCapacity) {
		t.Fatalf("Plan with a failed attempt holding its slot: %v, want ErrNoCapacity", err)
	}
	if _, err := s.Transition(ctx, got[1].ID, journal.StateCleaned, nil); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Plan(ctx, req); err != nil || a.Slot != 1 {
		t.Fatalf("Plan after slot 1 cleaned: slot %d, %v; want slot 1", a.Slot, err)
	}
	if _, err := s.Transition(ctx, got[0].ID, journal.StateCleaned, nil); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Plan(ctx, journal.PlanRequest{Target: "t", HostMax: 4, TargetMax: 4}); err != nil || a.Slot != 0 {
		t.Fatalf("Plan after slot 0 cleaned: slot %d, %v; want slot 0", a.Slot, err)
	}
}

func emptyTarget(t *testing.T, s Store, _ *clocktest.Clock) {
	if _, err := s.Plan(context.Background(), journal.PlanRequest{HostMax: 5, TargetMax: 5}); err == nil {
		t.Fatal("Plan with an empty target succeeded")
	}
	if n := liveCount(t, s); n != 0 {
		t.Errorf("a refused Plan left %d attempts", n)
	}
}

// Each attempt gets a unique id, the runner name is derived from it, and Plan records the request.
func identity(t *testing.T, s Store, clk *clocktest.Clock) {
	seen := map[string]bool{}
	for range 12 {
		a := plan(t, s, "t")
		if seen[a.ID] || a.ID == "" {
			t.Fatalf("id %q repeated or empty", a.ID)
		}
		seen[a.ID] = true
		if a.RunnerName != journal.RunnerNamePrefix+a.ID {
			t.Errorf("runner name %q, want %q", a.RunnerName, journal.RunnerNamePrefix+a.ID)
		}
		if a.State != journal.StatePlanned || a.Target != "t" || a.Policy != "p1" || !slices.Equal(a.Labels, []string{"linux"}) {
			t.Errorf("planned attempt %+v does not record its request", a)
		}
		if !a.CreatedAt.Equal(clk.Now()) || !a.UpdatedAt.Equal(clk.Now()) {
			t.Errorf("created %v, updated %v; want the store's clock %v", a.CreatedAt, a.UpdatedAt, clk.Now())
		}
	}
}

// Every pair of states: accepted exactly when the lifecycle allows it; a refusal changes nothing.
func transitionTable(t *testing.T, s Store, _ *clocktest.Clock) {
	ctx := context.Background()
	for _, from := range AllStates {
		for _, to := range AllStates {
			want := Lifecycle[[2]journal.State{from, to}]
			t.Run(fmt.Sprintf("%s->%s", from, to), func(t *testing.T) {
				if got := journal.CanTransition(from, to); got != want {
					t.Fatalf("CanTransition = %v, want %v", got, want)
				}
				a := plan(t, s, "t")
				for _, st := range pathTo[from] {
					var err error
					if a, err = s.Transition(ctx, a.ID, st, nil); err != nil {
						t.Fatalf("setting up %s: %v", from, err)
					}
				}
				got, err := s.Transition(ctx, a.ID, to, func(x *journal.Attempt) { x.Reason = "why" })
				stored, gerr := s.Get(ctx, a.ID)
				if gerr != nil {
					t.Fatal(gerr)
				}
				if !want {
					if !errors.Is(err, journal.ErrIllegalTransition) || !strings.Contains(err.Error(), string(from)+" -> "+string(to)) {
						t.Fatalf("Transition: %v, want ErrIllegalTransition naming %s -> %s", err, from, to)
					}
					if stored.State != from || stored.Reason != "" {
						t.Fatalf("illegal transition changed the record: %+v", stored)
					}
					return
				}
				if err != nil {
					t.Fatalf("Transition: %v", err)
				}
				if got.State != to || stored.State != to || stored.Reason != "why" {
					t.Fatalf("after Transition: returned %s, stored %+v", got.State, stored)
				}
			})
		}
	}
	if (journal.State("bogus")).Terminal() || !journal.StateCleaned.Terminal() || journal.StateFailed.Terminal() {
		t.Fatal("only cleaned is terminal")
	}
}

// Updates are kept across later transitions; UpdatedAt follows the clock, CreatedAt stays.
func recordsFields(t *testing.T, s Store, clk *clocktest.Clock) {
	ctx := context.Background()
	a := plan(t, s, "org")
	clk.Advance(time.Minute)
	code := 3
	got, err := s.Transition(ctx, a.ID, journal.StateRegistered, func(x *journal.Attempt) {
		x.RunnerID, x.RuntimeDir = 42, "/var/lib/rm/runs/"+x.ID
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.RunnerID != 42 || !got.UpdatedAt.Equal(clk.Now()) || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("registered attempt %+v", got)
	}
	steps := []struct {
		to     journal.State
		update func(*journal.Attempt)
	}{
		{journal.StateStarted, func(x *journal.Attempt) { x.ShimPID, x.ShimStart = 1234, 987654 }},
		{journal.StateBusy, func(x *journal.Attempt) { x.JobID = 77 }},
		{journal.StateExited, func(x *journal.Attempt) { x.ExitCode = &code }},
	}
	for _, st := range steps {
		if _, err := s.Transition(ctx, a.ID, st.to, st.update); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := s.Get(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.RunnerID != 42 || stored.ShimPID != 1234 || stored.ShimStart != 987654 || stored.JobID != 77 ||
		stored.ExitCode == nil || *stored.ExitCode != 3 || !slices.Equal(stored.Labels, []string{"linux"}) || stored.Policy != "p1" {
		t.Fatalf("stored attempt lost fields: %+v", stored)
	}
}

// An update may not change what identifies an attempt; the refusal writes nothing.
func protectsIdentity(t *testing.T, s Store, _ *clocktest.Clock) {
	ctx := context.Background()
	a := plan(t, s, "t")
	for name, bad := range map[string]func(*journal.Attempt){
		"id":          func(x *journal.Attempt) { x.ID = "other" },
		"target":      func(x *journal.Attempt) { x.Target = "other" },
		"slot":        func(x *journal.Attempt) { x.Slot = 9 },
		"runner name": func(x *journal.Attempt) { x.RunnerName = "other" },
		"created":     func(x *journal.Attempt) { x.CreatedAt = x.CreatedAt.Add(time.Hour) },
		"state":       func(x *journal.Attempt) { x.State = journal.StateBusy },
	} {
		if _, err := s.Transition(ctx, a.ID, journal.StateRegistered, bad); err == nil {
			t.Errorf("update changing %s was accepted", name)
		}
	}
	if stored, err := s.Get(ctx, a.ID); err != nil || stored.State != journal.StatePlanned || stored.ID != a.ID || stored.Slot != a.Slot {
		t.Fatalf("after refused updates: %+v, %v", stored, err)
	}
}

func unknown(t *testing.T, s Store, _ *clocktest.Clock) {
	ctx := context.Background()
	if _, err := s.Transition(ctx, "nope", journal.StateCleaned, nil); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("Transition of unknown id: %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("Get of unknown id: %v, want ErrNotFound", err)
	}
}

// Live lists what owes work, oldest first (recovery walks it in that order), past ten attempts
// too, where a decimal id without padding would sort "10" before "2".
func liveOrder(t *testing.T, s Store, clk *clocktest.Clock) {
	ctx := context.Background()
	var want []string
	for i := range 12 {
		a := plan(t, s, fmt.Sprintf("t%d", i%3))
		clk.Advance(time.Second)
		if i%4 == 3 {
			if _, err := s.Transition(ctx, a.ID, journal.StateCleaned, nil); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if i%4 == 2 {
			if _, err := s.Transition(ctx, a.ID, journal.StateFailed, nil); err != nil {
				t.Fatal(err)
			}
		}
		want = append(want, a.ID)
	}
	live, err := s.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range live {
		got = append(got, a.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Live = %v, want the non-cleaned attempts in creation order %v", got, want)
	}
}

func cancelled(t *testing.T, s Store, _ *clocktest.Clock) {
	a := plan(t, s, "t")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Plan(ctx, journal.PlanRequest{Target: "t", HostMax: 5, TargetMax: 5}); err == nil {
		t.Error("Plan with a cancelled context succeeded")
	}
	if _, err := s.Transition(ctx, a.ID, journal.StateRegistered, nil); err == nil {
		t.Error("Transition with a cancelled context succeeded")
	}
	if _, err := s.Live(ctx); err == nil {
		t.Error("Live with a cancelled context succeeded")
	}
	if stored, err := s.Get(context.Background(), a.ID); err != nil || stored.State != journal.StatePlanned {
		t.Errorf("after cancelled calls: %+v, %v", stored, err)
	}
	if n := liveCount(t, s); n != 1 {
		t.Errorf("%d live attempts, want 1: a cancelled Plan wrote something", n)
	}
}

// Concurrent Plans (target loops, recovery) never together exceed a limit or share a slot.
func concurrentPlans(t *testing.T, s Store, _ *clocktest.Clock) {
	const (
		workers   = 20
		perWorker = 15
		hostMax   = 5
		targetMax = 3
	)
	ctx := context.Background()
	var (
		mu     sync.Mutex
		host   int
		target = map[string]int{}
		slots  = map[int]string{}
		wg     sync.WaitGroup
		errs   = make(chan error, workers)
	)
	for w := range workers {
		tgt := []string{"a", "b", "c"}[w%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < perWorker; {
				a, err := s.Plan(ctx, journal.PlanRequest{Target: tgt, HostMax: hostMax, TargetMax: targetMax})
				if errors.Is(err, journal.ErrNoCapacity) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				host++
				target[tgt]++
				holder, taken := slots[a.Slot]
				slots[a.Slot] = a.ID
				bad := host > hostMax || target[tgt] > targetMax || taken || a.Slot >= hostMax
				mu.Unlock()
				if bad {
					errs <- errors.New("limit exceeded or slot of " + a.ID + " shared with " + holder)
					return
				}
				// Uncounted just before the store releases it: counted until after, a Plan that
				// took the freed slot at once looked like a shared slot (~1 run in 20 under
				// -race). Only a double grant inside this one release is missed.
				mu.Lock()
				host--
				target[tgt]--
				delete(slots, a.Slot)
				mu.Unlock()
				if _, err := s.Transition(ctx, a.ID, journal.StateCleaned, nil); err != nil {
					errs <- err
					return
				}
				done++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := liveCount(t, s); n != 0 {
		t.Fatalf("%d live attempts after all were cleaned", n)
	}
}
