package scaleset

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

// killable stands for a process killed with -9: once dead, it deletes no session on the way out.
type killable struct {
	*Client
	dead atomic.Bool
}

func (k *killable) DeleteSession(ctx context.Context, setID int64, id string) error {
	if k.dead.Load() {
		return nil
	}
	return k.Client.DeleteSession(ctx, setID, id)
}

// deadStore is the journal of a killed process: nothing it writes after death lands.
type deadStore struct {
	*memStore
	dead *atomic.Bool
}

func (d deadStore) PutMeta(ctx context.Context, k string, v []byte) error {
	if d.dead.Load() {
		return nil
	}
	return d.memStore.PutMeta(ctx, k, v)
}

func TestListenerDemandCapacityAndCrashBeforeAck(t *testing.T) {
	f := newFixture(t, ghsim.ActionsOptions{LongPoll: 20 * time.Millisecond, AssignTimeout: time.Hour, SessionExpiry: time.Hour})
	store := &memStore{m: map[string][]byte{}}
	want := ScaleSet{Name: "linux", RunnerGroupID: 1, Labels: []string{"linux"}}
	var capacity atomic.Int64
	capacity.Store(1)
	var mu sync.Mutex
	var seen []Demand
	crash := make(chan struct{})
	k := &killable{Client: f.c}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Listener{Client: f.c, Holder: &Holder{Client: k, Store: deadStore{store, &k.dead}, Key: "scaleset/t", Owner: "host"}, Want: want,
		Capacity: func() int { return int(capacity.Load()) },
		Process: func(d Demand) {
			mu.Lock()
			seen = append(seen, d)
			n := len(seen)
			mu.Unlock()
			if n == 3 { // killed after the message arrived, before its acknowledgement
				k.dead.Store(true)
				cancel()
				close(crash)
			}
		}}
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	livetest.Eventually(t, "the listener's session", func() bool { return len(f.srv.ScaleSets()) == 1 && f.srv.ScaleSets()[0].Session != "" })
	f.srv.QueueJob("acme/api", []string{"linux"}, -1)
	f.srv.QueueJob("acme/api", []string{"linux"}, -1)
	livetest.Eventually(t, "two demands", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) >= 2 })
	mu.Lock()
	if d := seen[1]; d.Waiting != 1 || d.Statistics.TotalAvailableJobs != 1 {
		t.Errorf("capacity 1: %+v, want one job assigned and waiting, one held back", d)
	}
	mu.Unlock()
	capacity.Store(3)
	<-crash
	<-done
	// Restart: the stale session (journaled) is deleted first, and the unacknowledged message comes again.
	if f.srv.ScaleSets()[0].Unacked != 1 {
		t.Fatalf("unacked messages %d, want 1", f.srv.ScaleSets()[0].Unacked)
	}
	var again []Demand
	ctx2, cancel2 := context.WithCancel(context.Background())
	l2 := &Listener{Client: f.c, Holder: &Holder{Client: f.c, Store: store, Key: "scaleset/t", Owner: "host"}, Want: want,
		Capacity: func() int { return 3 },
		Process: func(d Demand) {
			mu.Lock()
			again = append(again, d)
			mu.Unlock()
		}}
	go func() { done <- l2.Run(ctx2) }()
	livetest.Eventually(t, "two demands after the restart, all acknowledged", func() bool { mu.Lock(); defer mu.Unlock(); return len(again) >= 2 && f.srv.ScaleSets()[0].Unacked == 0 })
	cancel2()
	if err := <-done; ctx2.Err() == nil || err == nil {
		t.Fatalf("restart: %v (locked out by its own stale session?)", err)
	}
	if d := again[1]; d.Waiting != 2 {
		t.Errorf("after restart: %+v, want both jobs waiting", d)
	}
	if got := f.srv.ScaleSets()[0]; got.Session != "" || got.Unacked != 0 {
		t.Errorf("after a clean stop: session %q, %d unacked; want none", got.Session, got.Unacked)
	}
}

// TestEnsureReportsDroppedLabels: a GitHub that keeps a set's first label only (no custom
// scale-set labels) is reported through LabelsDropped with what it kept; one that keeps them all
// is not.
func TestEnsureReportsDroppedLabels(t *testing.T) {
	for _, custom := range []bool{false, true} {
		f := newFixture(t, ghsim.ActionsOptions{CustomLabels: custom})
		var kept []string
		called := false
		l := &Listener{Client: f.c, Want: ScaleSet{Name: "gpu-set", RunnerGroupID: 1, Labels: []string{"gpu-set", "gpu", "linux"}},
			LabelsDropped: func(k []string) { called, kept = true, k }}
		set, err := l.Ensure(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if custom && (called || len(set.Labels) != 3) {
			t.Errorf("custom labels kept: LabelsDropped called %v, set labels %v", called, set.Labels)
		}
		if !custom && (!called || len(kept) != 1 || kept[0] != "gpu-set") {
			t.Errorf("custom labels dropped: LabelsDropped called %v with %v, want [gpu-set]", called, kept)
		}
	}
}
