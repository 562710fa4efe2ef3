package journal

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/clocktest"
)

// newFakeClock is the injected clock: tests move time explicitly.
func newFakeClock() *clocktest.Clock {
	return clocktest.New(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
}

func openTest(t testing.TB, dir string, clk *clocktest.Clock) *Journal {
	t.Helper()
	j, err := Open(dir, Options{Now: clk.Now, Logger: discardLogger()})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

func plan(t testing.TB, j *Journal, target string) Attempt {
	t.Helper()
	a, err := j.Plan(context.Background(), PlanRequest{Target: target, Policy: "p1", Labels: []string{"linux"}, HostMax: 100, TargetMax: 100})
	if err != nil {
		t.Fatalf("Plan(%s): %v", target, err)
	}
	return a
}

func TestOpenInitialisesAndKeepsHostID(t *testing.T) {
	dir := t.TempDir() + "/journal"
	clk := newFakeClock()
	j, err := Open(dir, Options{Now: clk.Now, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	id := j.HostID()
	if !validHostID(id) {
		t.Fatalf("HostID %q is not 8 lowercase base32 chars", id)
	}
	a := plan(t, j, "org-a")
	if want := id + "-0000000001"; a.ID != want || a.RunnerName != RunnerNamePrefix+want {
		t.Fatalf("first attempt id %q name %q, want %q", a.ID, a.RunnerName, want)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Live(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Live after Close: %v, want ErrClosed", err)
	}
	j2 := openTest(t, dir, clk)
	if j2.HostID() != id {
		t.Fatalf("host id changed across reopen: %q -> %q", id, j2.HostID())
	}
	if b := plan(t, j2, "org-a"); b.ID != id+"-0000000002" {
		t.Fatalf("sequence not persisted: second id %q", b.ID)
	}
	other := openTest(t, t.TempDir(), clk)
	if other.HostID() == id {
		t.Fatalf("two journals share host id %q", id)
	}
}

func TestOpenTwiceInProcessIsLocked(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir, newFakeClock())
	_, err := Open(dir, Options{Logger: discardLogger()})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open in process: %v, want ErrLocked naming %s", err, dir)
	}
}

// The refusal names both counts, and a refused Plan uses no sequence number (journaltest checks
// the refusals themselves).
func TestPlanNoCapacityMessageAndSequence(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, t.TempDir(), newFakeClock())
	req := func(target string) PlanRequest {
		return PlanRequest{Target: target, HostMax: 3, TargetMax: 2}
	}
	for _, target := range []string{"a", "a", "b"} {
		if _, err := j.Plan(ctx, req(target)); err != nil {
			t.Fatalf("Plan(%s): %v", target, err)
		}
	}
	tests := []struct {
		name string
		req  PlanRequest
		msg  string
	}{
		{"host limit", req("c"), "host has 3/3"},
		{"target limit", PlanRequest{Target: "a", HostMax: 10, TargetMax: 2}, "target 2/2"},
		{"paused target", PlanRequest{Target: "d", HostMax: 10, TargetMax: 0}, "target 0/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := j.Plan(ctx, tt.req)
			if !errors.Is(err, ErrNoCapacity) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Plan: %v, want ErrNoCapacity mentioning %q", err, tt.msg)
			}
		})
	}
	host, tgt, err := j.Count(ctx, "a")
	if err != nil || host != 3 || tgt != 2 {
		t.Fatalf("Count(a) = %d, %d, %v; want 3, 2", host, tgt, err)
	}
	// Refused plans wrote nothing: the next id follows the third without a gap.
	a, err := j.Plan(ctx, PlanRequest{Target: "b", HostMax: 10, TargetMax: 10})
	if err != nil || !strings.HasSuffix(a.ID, "-0000000004") {
		t.Fatalf("Plan after refusals: %+v, %v; want sequence 4", a, err)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Each acknowledged Plan and Transition is exactly one synced batch; refusals write nothing.
func TestOneSyncedBatchPerWrite(t *testing.T) {
	ctx := context.Background()
	var writes int
	var mu sync.Mutex
	j, err := Open(t.TempDir(), Options{Logger: discardLogger(), OnWrite: func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if d <= 0 {
			t.Errorf("OnWrite got non-positive latency %v", d)
		}
		writes++
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	count := func() int { mu.Lock(); defer mu.Unlock(); return writes }
	steps := []struct {
		name string
		do   func() error
		want int
	}{
		{"plan", func() error { _, err := j.Plan(ctx, PlanRequest{Target: "t", HostMax: 1, TargetMax: 1}); return err }, 1},
		{"refused plan", func() error {
			if _, err := j.Plan(ctx, PlanRequest{Target: "t", HostMax: 1, TargetMax: 1}); !errors.Is(err, ErrNoCapacity) {
				return err
			}
			return nil
		}, 0},
		{"transition", func() error { _, err := j.Transition(ctx, j.HostID()+"-0000000001", StateRegistered, nil); return err }, 1},
		{"illegal transition", func() error {
			if _, err := j.Transition(ctx, j.HostID()+"-0000000001", StateBusy, nil); !errors.Is(err, ErrIllegalTransition) {
				return err
			}
			return nil
		}, 0},
		{"terminal transition", func() error {
			_, err := j.Transition(ctx, j.HostID()+"-0000000001", StateDeregistered, nil)
			if err == nil {
				_, err = j.Transition(ctx, j.HostID()+"-0000000001", StateCleaned, nil)
			}
			return err
		}, 2},
		{"prune", func() error { _, err := j.Prune(ctx, time.Now().Add(time.Hour)); return err }, 1},
		{"empty prune", func() error { _, err := j.Prune(ctx, time.Now().Add(time.Hour)); return err }, 0},
	}
	for _, s := range steps {
		before := count()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := count() - before; got != s.want {
			t.Errorf("%s: %d synced batches, want %d", s.name, got, s.want)
		}
	}
}
