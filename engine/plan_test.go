package engine

import (
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestPlan(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	idle := func(id string, d time.Duration) idleRunner { return idleRunner{ID: id, IdleSince: ago(d)} }
	stale := func(id string) idleRunner { return idleRunner{ID: id, IdleSince: now, Stale: true} }
	free := func(in planInput) planInput { in.Now, in.TargetFree, in.HostFree = now, 10, 10; return in }
	tests := []struct {
		name string
		in   planInput
		want planOutput
	}{
		{"nothing to do", free(planInput{}), planOutput{}},
		{"demand starts runners", free(planInput{Demand: 3}), planOutput{Wanted: 3, Start: 3}},
		{"idle and starting cover demand", free(planInput{Demand: 3, Idle: []idleRunner{idle("a", 0)}, Starting: 1}), planOutput{Wanted: 1, Start: 1}},
		{"min idle kept warm", free(planInput{MinIdle: 2}), planOutput{Wanted: 2, Start: 2}},
		{"demand plus min idle", free(planInput{Demand: 2, MinIdle: 1, Idle: []idleRunner{idle("a", 0)}}), planOutput{Wanted: 2, Start: 2}},
		{"target capacity bounds", planInput{Now: now, Demand: 5, TargetFree: 2, HostFree: 9}, planOutput{Wanted: 5, Start: 2}},
		{"host capacity bounds", planInput{Now: now, Demand: 5, TargetFree: 9, HostFree: 1}, planOutput{Wanted: 5, Start: 1}},
		{"negative free never starts", planInput{Now: now, Demand: 5, TargetFree: -1, HostFree: 3}, planOutput{Wanted: 5, Start: 0}},
		{"idle past timeout reaped", free(planInput{IdleTimeout: time.Minute, Idle: []idleRunner{idle("old", 2*time.Minute), idle("new", 10*time.Second)}}),
			planOutput{Reap: []reap{{"old", reapIdleTimeout}}}},
		{"min idle protects the newest", free(planInput{MinIdle: 1, IdleTimeout: time.Minute, Idle: []idleRunner{idle("old", 3*time.Minute), idle("mid", 2*time.Minute)}}),
			planOutput{Reap: []reap{{"old", reapIdleTimeout}}}},
		{"demand protects idle runners", free(planInput{Demand: 1, IdleTimeout: time.Minute, Idle: []idleRunner{idle("a", time.Hour)}}), planOutput{}},
		{"zero idle timeout never reaps", free(planInput{Idle: []idleRunner{idle("a", 24*time.Hour)}}), planOutput{}},
		{"stale idle replaced", free(planInput{MinIdle: 1, Idle: []idleRunner{stale("s")}}), planOutput{Wanted: 1, Start: 1, Reap: []reap{{"s", reapStale}}}},
		{"draining reaps all idle, starts nothing", free(planInput{Draining: true, Demand: 4, MinIdle: 2, Idle: []idleRunner{idle("a", 0), stale("b")}}),
			planOutput{Reap: []reap{{"a", reapDrain}, {"b", reapDrain}}}},
		// fleet: the other hosts' supply counts, and what is left goes to the most free capacity
		{"runners the view saw idle cover its queue", free(planInput{Demand: 2, MinIdle: 1, Unseen: 2, Self: "b"}), planOutput{Wanted: 1, Start: 1}},
		{"peers' unseen takes cover the view's queue", free(planInput{Demand: 3, MinIdle: 1, Self: "b", Peers: []PeerSupply{{Host: "a", Unseen: 2}}}), planOutput{Wanted: 2, Start: 2}},
		{"unseen takes beyond the queue are no warm pool", free(planInput{Demand: 3, MinIdle: 1, Unseen: 1, Self: "b", Peers: []PeerSupply{{Host: "a", Unseen: 3}}}), planOutput{Wanted: 1, Start: 1}},
		{"peers' supply covers demand", free(planInput{Demand: 3, Self: "b", Peers: []PeerSupply{{Host: "a", Starting: 1, Idle: 2, Free: 5}}}), planOutput{}},
		{"peers' supply counts before own idle", free(planInput{Demand: 3, Self: "b", Idle: []idleRunner{idle("x", 0)}, Peers: []PeerSupply{{Host: "a", Idle: 1, Free: 0}}}), planOutput{Wanted: 1, Start: 1}},
		{"min idle is fleet-wide", free(planInput{MinIdle: 2, Self: "b", Peers: []PeerSupply{{Host: "a", Idle: 2}}}), planOutput{}},
		{"placed on the most free capacity", free(planInput{Demand: 4, Self: "b", Peers: []PeerSupply{{Host: "a", Free: 20}}}), planOutput{Wanted: 4, Start: 0}},
		{"shares split between equal hosts", free(planInput{Demand: 5, Self: "b", Peers: []PeerSupply{{Host: "a", Free: 10}, {Host: "c", Free: 10}}}), planOutput{Wanted: 5, Start: 2}},
		{"the lower name takes the tie", free(planInput{Demand: 1, Self: "a", Peers: []PeerSupply{{Host: "b", Free: 10}}}), planOutput{Wanted: 1, Start: 1}},
		{"full peers leave it all here", free(planInput{Demand: 3, Self: "b", Peers: []PeerSupply{{Host: "a", Free: 0}}}), planOutput{Wanted: 3, Start: 3}},
		{"local capacity still bounds the share", planInput{Now: now, Demand: 6, TargetFree: 1, HostFree: 1, Self: "b", Peers: []PeerSupply{{Host: "a", Free: 1}}}, planOutput{Wanted: 6, Start: 1}},
		{"fleet keeps only its min idle warm", free(planInput{MinIdle: 1, Self: "b", IdleTimeout: time.Minute, Idle: []idleRunner{idle("old", time.Hour)}, Peers: []PeerSupply{{Host: "a", Idle: 1}}}),
			planOutput{Reap: []reap{{"old", reapIdleTimeout}}}},
		// a fleet's light pass (Here): its share is all the fleet wants, launched on this host
		{"light pass launches here, not on the most free host", free(planInput{Here: true, Demand: 1, MinIdle: 1, Self: "b", Peers: []PeerSupply{{Host: "a", Free: 20}}}), planOutput{Wanted: 2, Start: 2}},
		{"light pass: peers and unseen takes cover", free(planInput{Here: true, Demand: 3, MinIdle: 1, Unseen: 2, Self: "b", Peers: []PeerSupply{{Host: "a", Idle: 1}}}), planOutput{Wanted: 1, Start: 1}},
		{"light pass within this host's free capacity", planInput{Here: true, Demand: 5, TargetFree: 2, HostFree: 10, Self: "b", Peers: []PeerSupply{{Host: "a", Free: 20}}}, planOutput{Wanted: 5, Start: 2}},
		{"monitor starts nothing and drains what it owns", free(planInput{Monitor: true, Demand: 4, MinIdle: 1, IdleTimeout: time.Second, Idle: []idleRunner{idle("a", time.Hour), stale("b")}}),
			planOutput{Reap: []reap{{"a", reapMonitor}, {"b", reapMonitor}}}},
		{"monitor draining reaps for the drain", free(planInput{Monitor: true, Draining: true, Idle: []idleRunner{idle("a", 0)}}),
			planOutput{Reap: []reap{{"a", reapDrain}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plan(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("plan:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestJitterStaysWithinTenPercent(t *testing.T) {
	for _, n := range []int64{0, 1, 1 << 40} {
		d := jitter(constRand(n), 30*time.Second)
		if d < 27*time.Second || d > 33*time.Second {
			t.Fatalf("jitter(%d) = %s, want 30s±10%%", n, d)
		}
	}
	if lo, hi := jitter(constRand(0), 30*time.Second), jitter(constRand(1<<62), 30*time.Second); lo == hi {
		t.Fatal("jitter must depend on the random source")
	}
}

// constRand answers min(v, n-1): 0 is the low edge, a huge value the high edge.
type constRand int64

func (c constRand) Int64N(n int64) int64 { return min(int64(c), n-1) }

// TestLoopsShareTheRandSafely: every target loop draws its poll jitter from the supervisor's one
// generator at the end of its pass, at the same time as the others (the daemon's math/rand
// generator is not safe for that). A generator that counts its draws without a lock loses none.
func TestLoopsShareTheRandSafely(t *testing.T) {
	r := &countingRand{}
	s := New(Deps{Rand: r}, Options{})
	const loops, draws = 8, 200
	var wg sync.WaitGroup
	for range loops {
		wg.Go(func() {
			for range draws {
				jitter(s.rand, 30*time.Second)
			}
		})
	}
	wg.Wait()
	if r.n != loops*draws {
		t.Fatalf("%d draws counted, want %d", r.n, loops*draws)
	}
}

// countingRand counts its draws, unsynchronised as math/rand's generators are.
type countingRand struct{ n int64 }

func (c *countingRand) Int64N(n int64) int64 { c.n++; return c.n % n }
