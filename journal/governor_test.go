package journal

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// The governor's grants and the poll plan's basis survive a close and reopen (a restart), and a
// journal without them reads as zero.
func TestGovernorGrantsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := j.Governor(ctx); err != nil || len(g.Accounts) != 0 {
		t.Fatalf("fresh journal: %+v, %v", g, err)
	}
	if b, err := j.PollPlan(ctx); err != nil || len(b.RepoCounts) != 0 {
		t.Fatalf("fresh journal's poll plan: %+v, %v", b, err)
	}
	want := GovernorGrants{At: time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC),
		Accounts: map[string][]SecondPoints{"": {{Unix: 100, Points: 30}, {Unix: 104, Points: 30}}, "acme": {{Unix: 101, Points: 5}}}}
	if err := j.RecordGovernor(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	got, err := j.Governor(ctx)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen: %+v, %v; want %+v", got, err, want)
	}
	basis := PollPlanBasis{Stretch: 2.5, RepoCounts: map[string]int{"big": 300}}
	if err := j.RecordPollPlan(ctx, basis); err != nil {
		t.Fatal(err)
	}
	if got, err := j.PollPlan(ctx); err != nil || !reflect.DeepEqual(got, basis) {
		t.Fatalf("poll plan basis: %+v, %v; want %+v", got, err, basis)
	}
}
