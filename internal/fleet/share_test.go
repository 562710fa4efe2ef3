package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/fleet/etcdtest"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

// TestOneLeaderReadsGitHubAndFollowersReadTheView: of three hosts exactly one reads GitHub; the
// others get the same runners and jobs from etcd without a GitHub request; when the leader stops,
// another takes over.
func TestOneLeaderReadsGitHubAndFollowersReadTheView(t *testing.T) {
	srv := etcdtest.Start(t)
	gh := &github{}
	gh.queue(3)
	hs := []*host{startHost(t, srv, "a", "id-a", &github{}), startHost(t, srv, "b", "id-b", &github{}), startHost(t, srv, "c", "id-c", &github{})}
	for _, h := range hs {
		h.gh.queue(3)
	}
	livetest.Eventually(t, "one leader", func() bool { n, _ := leaders(hs...); return n == 1 })
	_, lead := leaders(hs...)
	lead.pass(t, target, engine.PeerSupply{Free: 10})
	for _, h := range hs {
		if h == lead {
			continue
		}
		h.begin(t, target, true)
		jobs, err := h.queued(context.Background(), target)
		if err != nil || len(jobs) != 3 {
			t.Fatalf("follower %s read %d jobs (%v), want the leader's 3", h.f.Host(), len(jobs), err)
		}
		if r := h.gh.reads.Load(); r != 0 {
			t.Fatalf("follower %s made %d GitHub reads, want 0", h.f.Host(), r)
		}
	}
	if r := lead.gh.reads.Load(); r != 2 {
		t.Fatalf("leader made %d GitHub reads, want 2 (runners, jobs)", r)
	}
	lead.stop()
	var rest []*host
	for _, h := range hs {
		if h != lead {
			rest = append(rest, h)
		}
	}
	livetest.Eventually(t, "the leadership to move", func() bool { n, _ := leaders(rest...); return n == 1 })
	if st := rest[0].f.Status(); len(st.Hosts) != 2 || len(st.Targets) != 1 || st.Targets[0].Leader == lead.f.Host() {
		livetest.Eventually(t, "status to show two hosts and the new leader", func() bool {
			st := rest[0].f.Status()
			return len(st.Hosts) == 2 && st.Targets[0].Leader != lead.f.Host() && st.Targets[0].Leader != ""
		})
	}
}

// TestClaimsNeverExceedDemand: hosts deciding at the same moment never start more runners between
// them than the jobs queued; their transactions serialise.
func TestClaimsNeverExceedDemand(t *testing.T) {
	srv := etcdtest.Start(t)
	hs := []*host{startHost(t, srv, "a", "id-a", &github{}), startHost(t, srv, "b", "id-b", &github{}), startHost(t, srv, "c", "id-c", &github{})}
	for _, h := range hs {
		h.gh.queue(10)
	}
	livetest.Eventually(t, "one leader", func() bool { n, _ := leaders(hs...); return n == 1 })
	_, lead := leaders(hs...)
	lead.pass(t, target, engine.PeerSupply{Free: 0}) // publishes the view of 10 jobs
	for _, h := range hs {
		livetest.Eventually(t, "the view on every host", func() bool { _, ok := h.f.ep.mir.get(h.f.keys.view(target.Name)); return ok })
	}
	var total, decided atomic.Int64
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// No host wants a list, so the leader's view stays the one every host read and
			// each claim is decided, serialised by the transactions, not refused as stale.
			s, ok := h.passListing(t, target, engine.PeerSupply{Free: 10}, false)
			total.Add(int64(s))
			if ok {
				decided.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := total.Load(); got != 10 {
		t.Fatalf("three hosts deciding at once started %d runners for 10 queued jobs, want exactly 10", got)
	}
	if n := decided.Load(); n != 3 {
		t.Fatalf("%d of 3 claims were decided, want all: the view did not move", n)
	}
}

// leaderAndFollower starts a fleet of two hosts and returns its leader and its follower.
func leaderAndFollower(t *testing.T) (lead, follow *host) {
	t.Helper()
	srv := etcdtest.Start(t)
	a, b := startHost(t, srv, "a", "id-a", &github{}), startHost(t, srv, "b", "id-b", &github{})
	livetest.Eventually(t, "one leader", func() bool { n, _ := leaders(a, b); return n == 1 })
	if _, lead = leaders(a, b); lead == a {
		return a, b
	}
	return b, a
}

// TestViewMovedOnHoldsTheClaim: a pass that read a view the leader has since replaced starts nothing.
func TestViewMovedOnHoldsTheClaim(t *testing.T) {
	lead, follow := leaderAndFollower(t)
	lead.gh.queue(2)
	lead.pass(t, target, engine.PeerSupply{})
	livetest.Eventually(t, "the view", func() bool { _, ok := follow.f.ep.mir.get(follow.f.keys.view(target.Name)); return ok })
	ctx := context.Background()
	follow.begin(t, target, true)
	lead.gh.queue(5)
	lead.pass(t, target, engine.PeerSupply{}) // a new view while the follower's pass runs
	livetest.Eventually(t, "the new view", func() bool {
		e, _ := follow.f.ep.mir.get(follow.f.keys.view(target.Name))
		return e.mod != follow.p.(*passState).viewMod
	})
	if follow.share(ctx, target, func(string, []engine.PeerSupply, int64) engine.PeerSupply { return engine.PeerSupply{Starting: 2} }) {
		t.Fatal("Share published a decision taken on a replaced view")
	}
}

// TestLeaderPassWithoutJobsDecides: a leader's pass that reads the runners but no jobs (a drain, a
// failed jobs read) decides on the view it published itself; it is not refused as "the view moved".
func TestLeaderPassWithoutJobsDecides(t *testing.T) {
	srv := etcdtest.Start(t)
	a := startHost(t, srv, "a", "id-a", &github{})
	livetest.Eventually(t, "a leads", func() bool { return a.f.leads(target.Name) })
	a.gh.queue(1)
	if _, ok := a.pass(t, target, engine.PeerSupply{Free: 4}); !ok {
		t.Fatal("the leader's first pass was refused")
	}
	ctx := context.Background()
	a.begin(t, target, true)
	if !a.share(ctx, target, func(string, []engine.PeerSupply, int64) engine.PeerSupply { return engine.PeerSupply{Idle: 1} }) {
		t.Fatal("a leader's pass without a jobs read was refused: its own view counted as moved on")
	}
}

// TestLeaderListsWhenAHostWaitsForIt: the leader reads the runner list only when its own rules
// want it or another host published that it waits for one; a follower takes each list the leader
// read once, with its age, and never reads GitHub.
func TestLeaderListsWhenAHostWaitsForIt(t *testing.T) {
	lead, follow := leaderAndFollower(t)
	ctx := context.Background()
	leaderPass := func(want bool) {
		t.Helper()
		lead.begin(t, target, want)
		if _, err := lead.queued(ctx, target); err != nil {
			t.Fatal(err)
		}
	}
	lead.gh.runners = []engine.Runner{{ID: 1, Name: "r1"}}
	leaderPass(true)
	if r := lead.gh.reads.Load(); r != 2 {
		t.Fatalf("leader's listing pass made %d GitHub reads, want 2 (runners, jobs)", r)
	}
	leaderPass(false)
	if r := lead.gh.reads.Load(); r != 3 {
		t.Fatalf("leader's pass without a list made %d GitHub reads in all, want 3 (its jobs only)", r)
	}
	livetest.Eventually(t, "the view", func() bool { _, ok := follow.f.ep.mir.get(follow.f.keys.view(target.Name)); return ok })
	if list, age := follow.beginPass(ctx, target, false); !list || age < 0 {
		t.Fatalf("follower: Begin = %v, %s; want the leader's new list, not older than now", list, age)
	}
	if rs, err := follow.runners(ctx, target); err != nil || len(rs) != 1 || rs[0].Name != "r1" {
		t.Fatalf("follower's list = %v (%v), want the leader's r1", rs, err)
	}
	if list, _ := follow.beginPass(ctx, target, true); list {
		t.Fatal("follower was given the same list twice")
	}
	follow.publish(ctx, target, engine.PeerSupply{List: true})
	livetest.Eventually(t, "the leader to see the follower wait", func() bool {
		peers, _ := lead.f.peers(lead.f.ep, target.Name)
		return len(peers) == 1 && peers[0].List
	})
	lead.gh.runners = append(lead.gh.runners, engine.Runner{ID: 2, Name: "r2"})
	if list, _ := lead.beginPass(ctx, target, false); !list {
		t.Fatal("the leader did not list though another host waits for a list")
	}
	if _, err := lead.runners(ctx, target); err != nil {
		t.Fatal(err)
	}
	if _, err := lead.queued(ctx, target); err != nil {
		t.Fatal(err)
	}
	livetest.Eventually(t, "the follower to get the new list", func() bool {
		list, _ := follow.beginPass(ctx, target, true)
		if !list {
			return false
		}
		rs, err := follow.runners(ctx, target)
		return err == nil && len(rs) == 2
	})
	if r := follow.gh.reads.Load(); r != 0 {
		t.Fatalf("follower made %d GitHub reads, want 0", r)
	}
	// A second Runners call in the same pass (a lookup by name) is GitHub's, not the view's.
	if _, err := follow.runners(ctx, target); err != nil || follow.gh.reads.Load() != 1 {
		t.Fatalf("a follower's lookup after its pass's list: %d GitHub reads (%v), want 1", follow.gh.reads.Load(), err)
	}
}

// TestViewSaysWhichTakesTheLeaderSaw: the leader's view records each follower's Took as it was
// before the leader read the jobs, and a follower's decide is told it (the leader's own is told
// -1: its read is its own). A new take is news even when the jobs are the same: the view is
// published again, so the follower's runners stop covering the view's queue.
func TestViewSaysWhichTakesTheLeaderSaw(t *testing.T) {
	lead, follow := leaderAndFollower(t)
	lead.gh.queue(1)
	ctx := context.Background()
	// pass is one engine pass of h publishing took; it returns the saw decide was told last.
	pass := func(h *host, took int64) int64 {
		h.begin(t, target, false)
		if _, err := h.queued(ctx, target); err != nil {
			t.Fatal(err)
		}
		return h.shareTook(took)
	}
	if saw := pass(lead, 5); saw != -1 {
		t.Fatalf("the leader's decide was told saw %d, want -1 (it read GitHub itself)", saw)
	}
	if saw := pass(follow, 2); saw != 0 {
		t.Fatalf("the follower's decide was told saw %d before the leader saw any take of it, want 0", saw)
	}
	for _, took := range []int64{2, 3} {
		follow.publish(ctx, target, engine.PeerSupply{Took: took})
		livetest.Eventually(t, fmt.Sprintf("a view that saw the follower's %d takes", took), func() bool {
			pass(lead, 5)
			return pass(follow, took) == took
		})
	}
}

// TestLightPassClaimsOnTheCurrentView: a light pass (a runner's end between full passes) reads no
// GitHub, plans on the jobs of the view the fleet has now (BeginLight hands them), and its Share
// is fenced on that view, so a follower whose last full pass read a view the leader has since
// replaced still claims, on the new view's jobs; three hosts' light passes claiming at once the
// new view's 5 jobs and the one warm runner of min_idle 1 start 6 between them.
func TestLightPassClaimsOnTheCurrentView(t *testing.T) {
	srv := etcdtest.Start(t)
	hs := []*host{startHost(t, srv, "a", "id-a", &github{}), startHost(t, srv, "b", "id-b", &github{}), startHost(t, srv, "c", "id-c", &github{})}
	livetest.Eventually(t, "one leader", func() bool { n, _ := leaders(hs...); return n == 1 })
	_, lead := leaders(hs...)
	lead.gh.queue(2)
	lead.pass(t, target, engine.PeerSupply{})
	for _, h := range hs {
		livetest.Eventually(t, "the view on every host", func() bool { _, ok := h.f.ep.mir.get(h.f.keys.view(target.Name)); return ok })
		if h != lead {
			h.begin(t, target, false) // each follower's last full pass read this view
		}
	}
	lead.gh.queue(5)
	lead.pass(t, target, engine.PeerSupply{}) // the leader's next poll: a new view
	for _, h := range hs {
		livetest.Eventually(t, "the new view on every host", func() bool {
			e, _ := h.f.ep.mir.get(h.f.keys.view(target.Name))
			return h == lead || e.mod != h.p.(*passState).viewMod
		})
	}
	reads := make([]int64, len(hs))
	for i, h := range hs {
		reads[i] = h.gh.reads.Load()
	}
	var started, decided atomic.Int64
	var wg sync.WaitGroup
	handed := make([]int, len(hs))
	for i, h := range hs {
		wg.Go(func() {
			jobs, shared := h.beginLight(target)
			if !shared {
				return
			}
			handed[i] = len(jobs)
			start := 0
			ok := h.share(context.Background(), target, func(_ string, peers []engine.PeerSupply, _ int64) engine.PeerSupply {
				need := len(jobs) + 1 // the view's queued jobs and min_idle 1
				for _, p := range peers {
					need -= p.Starting + p.Idle
				}
				start = max(need, 0)
				return engine.PeerSupply{Starting: start, Free: 10 - start}
			})
			if ok {
				decided.Add(1)
				started.Add(int64(start))
			}
		})
	}
	wg.Wait()
	for i, n := range handed {
		if n != 5 {
			t.Fatalf("host %s's light pass was handed %d jobs, want the current view's 5", hs[i].f.Host(), n)
		}
	}
	if n := decided.Load(); n != 3 {
		t.Fatalf("%d of 3 light claims were decided, want all: no view was published during them", n)
	}
	if got := started.Load(); got != 6 {
		t.Fatalf("three light passes claiming at once started %d runners for 5 jobs and min_idle 1, want 6", got)
	}
	for i, h := range hs {
		if r := h.gh.reads.Load(); r != reads[i] {
			t.Fatalf("host %s read GitHub %d times in its light pass, want 0", h.f.Host(), r-reads[i])
		}
	}
}

// TestLightPassIsToldTheTakesTheViewSaw: a light pass's decide is told how many of this host's
// takes the fleet's current view saw, whoever leads: a follower the view's Saw of it, the leader
// (on a view it published) its own Took when it read the jobs; not -1 as the leader's full pass
// is, since its runners may have taken the view's jobs since.
func TestLightPassIsToldTheTakesTheViewSaw(t *testing.T) {
	lead, follow := leaderAndFollower(t)
	lead.gh.queue(1)
	ctx := context.Background()
	light := func(h *host, took int64) int64 {
		h.beginLight(target)
		return h.shareTook(took)
	}
	lead.passListing(t, target, engine.PeerSupply{}, false)
	livetest.Eventually(t, "the view on the follower", func() bool { _, ok := follow.f.ep.mir.get(follow.f.keys.view(target.Name)); return ok })
	follow.begin(t, target, false)
	lead.publish(ctx, target, engine.PeerSupply{Took: 4}) // the leader's runners took 4 jobs so far
	follow.publish(ctx, target, engine.PeerSupply{Took: 2})
	livetest.Eventually(t, "the follower's takes on the leader", func() bool { return lead.f.took(lead.f.ep, target.Name)[follow.f.Host()] == 2 })
	lead.passListing(t, target, engine.PeerSupply{}, false) // reads the jobs: the view saw 4 and 2
	livetest.Eventually(t, "the new view on the follower", func() bool {
		e, _ := follow.f.ep.mir.get(follow.f.keys.view(target.Name))
		var v view
		return json.Unmarshal([]byte(e.val), &v) == nil && v.Saw[follow.f.Host()] == 2
	})
	if saw := light(lead, 5); saw != 4 {
		t.Fatalf("the leader's light pass was told saw %d, want 4 (its Took when it read the view's jobs)", saw)
	}
	if saw := light(follow, 3); saw != 2 {
		t.Fatalf("the follower's light pass was told saw %d, want 2 (the view's Saw of it)", saw)
	}
}

// TestUnseenTakesReachThePeers: a host's takes its view had not seen (engine.PeerSupply.Unseen)
// are published apart from its idle runners, so the other hosts count them against the view's
// queued jobs only, never as the warm pool.
func TestUnseenTakesReachThePeers(t *testing.T) {
	lead, follow := leaderAndFollower(t)
	lead.gh.queue(2)
	lead.passListing(t, target, engine.PeerSupply{}, false)
	livetest.Eventually(t, "the view on the follower", func() bool { _, ok := follow.f.ep.mir.get(follow.f.keys.view(target.Name)); return ok })
	follow.begin(t, target, false)
	follow.publish(context.Background(), target, engine.PeerSupply{Idle: 1, Took: 3, Unseen: 2})
	livetest.Eventually(t, "the follower's supply on the leader", func() bool {
		peers, _ := lead.f.peers(lead.f.ep, target.Name)
		return len(peers) == 1 && peers[0].Took == 3
	})
	peers, _ := lead.f.peers(lead.f.ep, target.Name)
	if p := peers[0]; p.Idle != 1 || p.Unseen != 2 {
		t.Fatalf("the leader sees the follower's supply as %+v, want idle 1 and unseen 2", p)
	}
}
