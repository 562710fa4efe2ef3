package journal

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// The governor's grants survive a close and reopen (a restart), and a journal without any reads
// as zero.
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
}
