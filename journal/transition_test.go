package journal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// lifecycle is DESIGN.md's lifecycle written out independently of the legal table, so a change to
// either shows up here.
var lifecycle = map[[2]State]bool{
	{StatePlanned, StateRegistered}:      true,
	{StatePlanned, StateFailed}:          true,
	{StatePlanned, StateCleaned}:         true,
	{StateRegistered, StateStarted}:      true,
	{StateRegistered, StateDeregistered}: true,
	{StateRegistered, StateFailed}:       true,
	{StateStarted, StateBusy}:            true,
	{StateStarted, StateExited}:          true,
	{StateStarted, StateDeregistered}:    true,
	{StateStarted, StateFailed}:          true,
	{StateBusy, StateExited}:             true,
	{StateBusy, StateFailed}:             true,
	{StateExited, StateDeregistered}:     true,
	{StateExited, StateCleaned}:          true,
	{StateExited, StateFailed}:           true,
	{StateDeregistered, StateExited}:     true,
	{StateDeregistered, StateCleaned}:    true,
	{StateDeregistered, StateFailed}:     true,
	{StateFailed, StateDeregistered}:     true,
	{StateFailed, StateCleaned}:          true,
}

var allStates = []State{StatePlanned, StateRegistered, StateStarted, StateBusy, StateExited, StateDeregistered, StateCleaned, StateFailed}

// pathTo is a legal route from planned to s.
var pathTo = map[State][]State{
	StatePlanned:      nil,
	StateRegistered:   {StateRegistered},
	StateStarted:      {StateRegistered, StateStarted},
	StateBusy:         {StateRegistered, StateStarted, StateBusy},
	StateExited:       {StateRegistered, StateStarted, StateExited},
	StateDeregistered: {StateRegistered, StateDeregistered},
	StateCleaned:      {StateCleaned},
	StateFailed:       {StateFailed},
}

func TestTransitionTable(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, t.TempDir(), newFakeClock())
	for _, from := range allStates {
		for _, to := range allStates {
			want := lifecycle[[2]State{from, to}]
			t.Run(fmt.Sprintf("%s->%s", from, to), func(t *testing.T) {
				if got := CanTransition(from, to); got != want {
					t.Fatalf("CanTransition = %v, want %v", got, want)
				}
				a := plan(t, j, "t")
				for _, s := range pathTo[from] {
					var err error
					if a, err = j.Transition(ctx, a.ID, s, nil); err != nil {
						t.Fatalf("setting up %s: %v", from, err)
					}
				}
				got, err := j.Transition(ctx, a.ID, to, func(x *Attempt) { x.Reason = "why" })
				stored, gerr := j.Get(ctx, a.ID)
				if gerr != nil {
					t.Fatal(gerr)
				}
				if !want {
					if !errors.Is(err, ErrIllegalTransition) || !strings.Contains(err.Error(), string(from)+" -> "+string(to)) {
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
	if (State("bogus")).Terminal() || !StateCleaned.Terminal() || StateFailed.Terminal() {
		t.Fatal("only cleaned is terminal")
	}
}

func TestTransitionRecordsFieldsAndTime(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	j := openTest(t, t.TempDir(), clk)
	a := plan(t, j, "org")
	clk.Advance(time.Minute)
	code := 3
	got, err := j.Transition(ctx, a.ID, StateRegistered, func(x *Attempt) {
		x.RunnerID, x.RuntimeDir = 42, "/var/lib/rm/runs/"+x.ID
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.RunnerID != 42 || !got.UpdatedAt.Equal(clk.Now()) || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("registered attempt %+v", got)
	}
	if _, err := j.Transition(ctx, a.ID, StateStarted, func(x *Attempt) { x.ShimPID, x.ShimStart = 1234, 987654 }); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Transition(ctx, a.ID, StateBusy, func(x *Attempt) { x.JobID = 77 }); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Transition(ctx, a.ID, StateExited, func(x *Attempt) { x.ExitCode = &code }); err != nil {
		t.Fatal(err)
	}
	stored, err := j.Get(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.RunnerID != 42 || stored.ShimPID != 1234 || stored.ShimStart != 987654 || stored.JobID != 77 ||
		stored.ExitCode == nil || *stored.ExitCode != 3 || stored.Labels[0] != "linux" || stored.Policy != "p1" {
		t.Fatalf("stored attempt lost fields: %+v", stored)
	}

	for name, bad := range map[string]func(*Attempt){
		"id":    func(x *Attempt) { x.ID = "other" },
		"slot":  func(x *Attempt) { x.Slot = 9 },
		"state": func(x *Attempt) { x.State = StateCleaned },
	} {
		if _, err := j.Transition(ctx, a.ID, StateCleaned, bad); err == nil || !strings.Contains(err.Error(), "identity") {
			t.Errorf("update changing %s: %v, want refusal", name, err)
		}
	}
	if _, err := j.Transition(ctx, "nope", StateCleaned, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Transition of unknown id: %v, want ErrNotFound", err)
	}
	if _, err := j.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of unknown id: %v, want ErrNotFound", err)
	}
}

func TestLiveListCountPrune(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	j := openTest(t, t.TempDir(), clk)
	a1, a2, b1, b2 := plan(t, j, "a"), plan(t, j, "a"), plan(t, j, "b"), plan(t, j, "b")
	mustTransition(t, j, a1.ID, StateCleaned)
	mustTransition(t, j, b1.ID, StateFailed)
	clk.Advance(time.Hour)
	mustTransition(t, j, b2.ID, StateCleaned) // cleaned, but recently

	live, err := j.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ids := idsOf(live); ids != a2.ID+","+b1.ID {
		t.Fatalf("Live = %s, want %s,%s", ids, a2.ID, b1.ID)
	}
	tests := []struct {
		f    Filter
		want []Attempt
	}{
		{Filter{}, []Attempt{a1, a2, b1, b2}},
		{Filter{Target: "a"}, []Attempt{a1, a2}},
		{Filter{States: []State{StateCleaned}}, []Attempt{a1, b2}},
		{Filter{Target: "b", States: []State{StateFailed, StatePlanned}}, []Attempt{b1}},
		{Filter{Target: "zzz"}, nil},
	}
	for _, tt := range tests {
		got, err := j.List(ctx, tt.f)
		if err != nil || idsOf(got) != idsOf(tt.want) {
			t.Errorf("List(%+v) = %s, %v; want %s", tt.f, idsOf(got), err, idsOf(tt.want))
		}
	}
	if host, tgt, err := j.Count(ctx, "b"); err != nil || host != 2 || tgt != 1 {
		t.Fatalf("Count(b) = %d, %d, %v; want 2, 1", host, tgt, err)
	}
	n, err := j.Prune(ctx, clk.Now().Add(-time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1 (only the old cleaned one)", n, err)
	}
	if _, err := j.Get(ctx, a1.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("pruned attempt still there: %v", err)
	}
	if rest, _ := j.List(ctx, Filter{}); idsOf(rest) != idsOf([]Attempt{a2, b1, b2}) {
		t.Fatalf("after Prune: %s", idsOf(rest))
	}
	if n, err := j.Prune(ctx, clk.Now().Add(-time.Minute)); err != nil || n != 0 {
		t.Fatalf("second Prune = %d, %v; want 0", n, err)
	}
}

func mustTransition(t testing.TB, j *Journal, id string, to State) Attempt {
	t.Helper()
	a, err := j.Transition(context.Background(), id, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func idsOf(as []Attempt) string {
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.ID
	}
	return strings.Join(ids, ",")
}

func TestCheckpointIsAnOpenableCopy(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, t.TempDir(), newFakeClock())
	a := plan(t, j, "t")
	dest := t.TempDir() + "/copy"
	if err := j.Checkpoint(ctx, dest); err != nil {
		t.Fatal(err)
	}
	mustTransition(t, j, a.ID, StateCleaned) // after the checkpoint: not in the copy
	c := openTest(t, dest, newFakeClock())
	got, err := c.Get(ctx, a.ID)
	if err != nil || got.State != StatePlanned || c.HostID() != j.HostID() {
		t.Fatalf("copy has %+v, %v, host %q; want the planned attempt of host %q", got, err, c.HostID(), j.HostID())
	}
	if err := j.Checkpoint(ctx, dest); err == nil {
		t.Fatal("Checkpoint into an existing directory succeeded")
	}
}
