package enginetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/journal"
)

func TestFakeClockFiresOnlyDueTimersAndForgetsStoppedOnes(t *testing.T) {
	c := NewFakeClock(time.Unix(100, 0))
	early, _ := c.Timer(time.Second)
	late, _ := c.Timer(time.Minute)
	_, stop := c.Timer(time.Second)
	stop()
	if c.Waiters() != 2 {
		t.Fatalf("waiters = %d, want 2 after a stop", c.Waiters())
	}
	c.Advance(2 * time.Second)
	select {
	case got := <-early:
		if !got.Equal(time.Unix(102, 0)) {
			t.Fatalf("fired at %v", got)
		}
	default:
		t.Fatal("due timer did not fire")
	}
	select {
	case <-late:
		t.Fatal("timer fired early")
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	if err := c.BlockUntil(short, 5); err == nil {
		t.Fatal("BlockUntil must give up when its context ends")
	}
}

// The journal's rules are the contract (contract_test.go); this covers what only the fake has.
func TestJournalCountsPeakAndInjectsFailures(t *testing.T) {
	ctx := context.Background()
	j := NewJournal("h")
	req := journal.PlanRequest{Target: "a", HostMax: 3, TargetMax: 3}
	a1, err := j.Plan(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Plan(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Transition(ctx, a1.ID, journal.StateCleaned, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Plan(ctx, req); err != nil {
		t.Fatal(err)
	}
	if j.MaxHostLive() != 2 {
		t.Fatalf("peak of live attempts = %d, want 2", j.MaxHostLive())
	}
	if got := j.History(a1.ID); !slices.Equal(got, []journal.State{journal.StatePlanned, journal.StateCleaned}) {
		t.Fatalf("history %v", got)
	}
	j.Fail = func(op string) error { return errors.New(op + " failed") }
	for op, call := range map[string]func() error{
		"plan":       func() error { _, err := j.Plan(ctx, req); return err },
		"transition": func() error { _, err := j.Transition(ctx, a1.ID, journal.StateCleaned, nil); return err },
		"live":       func() error { _, err := j.Live(ctx); return err },
	} {
		if err := call(); err == nil || err.Error() != op+" failed" {
			t.Errorf("%s with Fail set: %v", op, err)
		}
	}
}
