package journal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// The rules every store keeps (lifecycle table, fields and times, identity fields, unknown ids)
// are journaltest's contract, run against this journal by contract_test.go; the tests here cover
// what only the pebble journal has (List, Count, Prune, Checkpoint).

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
