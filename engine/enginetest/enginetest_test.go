package enginetest

import (
	"context"
	"errors"
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

func TestJournalEnforcesCapacityAndTransitions(t *testing.T) {
	ctx := context.Background()
	j := NewJournal("h")
	req := journal.PlanRequest{Target: "a", HostMax: 2, TargetMax: 1}
	a1, err := j.Plan(ctx, req)
	if err != nil || a1.Slot != 0 || a1.RunnerName != "runner-manager-h-1" {
		t.Fatalf("first plan = %+v, %v", a1, err)
	}
	if _, err := j.Plan(ctx, req); !errors.Is(err, journal.ErrNoCapacity) {
		t.Fatalf("target limit: %v", err)
	}
	b, err := j.Plan(ctx, journal.PlanRequest{Target: "b", HostMax: 2, TargetMax: 5})
	if err != nil || b.Slot != 1 {
		t.Fatalf("b = %+v, %v", b, err)
	}
	if _, err := j.Plan(ctx, journal.PlanRequest{Target: "c", HostMax: 2, TargetMax: 5}); !errors.Is(err, journal.ErrNoCapacity) {
		t.Fatalf("host limit: %v", err)
	}
	if _, err := j.Transition(ctx, a1.ID, journal.StateBusy, nil); !errors.Is(err, journal.ErrIllegalTransition) {
		t.Fatalf("planned -> busy: %v", err)
	}
	if _, err := j.Transition(ctx, a1.ID, journal.StateCleaned, nil); err != nil {
		t.Fatal(err)
	}
	c, err := j.Plan(ctx, journal.PlanRequest{Target: "c", HostMax: 2, TargetMax: 5})
	if err != nil || c.Slot != 0 {
		t.Fatalf("a cleaned attempt frees its slot: %+v, %v", c, err)
	}
	live, _ := j.Live(ctx)
	if len(live) != 2 || j.MaxHostLive() != 2 {
		t.Fatalf("live = %d, max = %d", len(live), j.MaxHostLive())
	}
	j.Fail = func(op string) error { return errors.New(op + " failed") }
	if _, err := j.Live(ctx); err == nil {
		t.Fatal("Fail is not honoured")
	}
}
