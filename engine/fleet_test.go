package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

// fakeFleet is the engine's side of a fleet: fixed peers, a switch for "the view moved on", and
// what this host published last. It lists as the engine asks (a leader with no other host
// waiting), unless noList (a follower whose leader has read no new list). internal/fleet tests
// the real one against etcd.
type fakeFleet struct {
	mu        sync.Mutex
	peers     []PeerSupply
	follower  bool  // the pass plans on a leader's view, not its own read
	saw       int64 // a follower's, and a light pass's: how many of this host's takes the view's read saw
	view      []Job // the fleet's current view's jobs, handed to a light pass
	alone     bool  // a light pass serves the target alone (BeginLight's shared false)
	light     bool  // the pass under way is a light one
	moved     bool
	noList    bool
	wants     []bool       // what each Begin was asked
	lights    int          // BeginLight calls
	shared    []PeerSupply // what each Share published
	published PeerSupply   // the last Publish
}

func (f *fakeFleet) Begin(_ context.Context, _ config.Target, want bool) (FleetPass, bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wants = append(f.wants, want)
	f.light = false
	return f, want && !f.noList, 0
}

func (f *fakeFleet) BeginLight(config.Target) (FleetPass, []Job, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lights++
	f.light = !f.alone
	return f, append([]Job(nil), f.view...), !f.alone
}

// The fake is its own passes: its reads are the world's.
func (f *fakeFleet) Runners(ctx context.Context, t config.Target, r Registrar) ([]Runner, error) {
	return r.Runners(ctx, t)
}

func (f *fakeFleet) Queued(ctx context.Context, t config.Target, d Demand) ([]Job, error) {
	return d.Queued(ctx, t)
}

func (f *fakeFleet) Share(_ context.Context, _ config.Target, decide func(string, []PeerSupply, int64) PeerSupply) bool {
	f.mu.Lock()
	peers, moved, saw := append([]PeerSupply(nil), f.peers...), f.moved, f.saw
	if !f.follower && !f.light {
		saw = -1
	}
	f.mu.Unlock()
	mine := decide("h-b", peers, saw)
	if moved {
		return false
	}
	f.mu.Lock()
	f.shared = append(f.shared, mine)
	f.mu.Unlock()
	return true
}

func (f *fakeFleet) Publish(_ context.Context, _ config.Target, mine PeerSupply) {
	f.mu.Lock()
	f.published = mine
	f.mu.Unlock()
}

func startWithFleet(t *testing.T, f *fakeFleet, queued int) *harness {
	h := newHarness(t)
	h.s.deps.Fleet = f
	h.w.setQueued("repo:acme/a", queued)
	h.begin(cfgOf(baseTarget("a")))
	return h
}

// TestFleetSupplyCoversDemand: runners another host has starting or idle count against demand, so
// this host starts only what is left, and what it starts is what it publishes.
func TestFleetSupplyCoversDemand(t *testing.T) {
	f := &fakeFleet{peers: []PeerSupply{{Host: "h-a", Starting: 2, Idle: 1, Free: 0}}}
	h := startWithFleet(t, f, 4)
	if got := h.byState("a")["started"]; got != 1 {
		t.Fatalf("started %d runners, want 1 (4 queued, 3 covered by the other host)", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.shared) == 0 || f.shared[0].Starting != 1 || f.shared[0].Free != 3 {
		t.Fatalf("shared %+v, want one starting and 3 free (max_runners 4)", f.shared)
	}
	if f.published.Idle != 1 || f.published.Starting != 0 || f.published.Free != 3 {
		t.Fatalf("published %+v after the pass, want the started runner idle and 3 free", f.published)
	}
}

// TestFleetPlacesOnTheMostFreeCapacity: a host with more free room takes the fleet's launches.
func TestFleetPlacesOnTheMostFreeCapacity(t *testing.T) {
	f := &fakeFleet{peers: []PeerSupply{{Host: "h-a", Free: 10}}}
	h := startWithFleet(t, f, 3)
	if got := len(h.j.All()); got != 0 {
		t.Fatalf("launched %d runners; the other host has more free capacity and takes all 3", got)
	}
}

// TestFleetViewMovedStartsNothing: when the fleet's view of GitHub changed since the pass read it,
// the pass launches nothing (a pass on the new view follows).
func TestFleetViewMovedStartsNothing(t *testing.T) {
	h := startWithFleet(t, &fakeFleet{moved: true}, 3)
	if got := len(h.j.All()); got != 0 {
		t.Fatalf("launched %d runners on a view the fleet had already replaced", got)
	}
}

// TestFleetDrainReapsWhateverTheFleetSays: a shutdown drain deregisters the idle runner even when
// the fleet refuses every decision (its view moved on): a drain asks the fleet nothing.
func TestFleetDrainReapsWhateverTheFleetSays(t *testing.T) {
	f := &fakeFleet{}
	h := startWithFleet(t, f, 1)
	if got := h.byState("a")["started"]; got != 1 {
		t.Fatalf("started %d runners, want 1", got)
	}
	f.mu.Lock()
	f.moved = true
	f.mu.Unlock()
	rep := h.shutdownDrained("Shutdown did not return once drained: the idle runner was never reaped")
	if rep.TimedOut || rep.Left != 0 {
		t.Fatalf("report = %+v, want the idle runner reaped and nothing left", rep)
	}
	h.joinRun()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.published.Idle != 0 || f.published.Starting != 0 {
		t.Fatalf("published %+v after the drain, want nothing idle or starting", f.published)
	}
}

// TestFleetLeaderListsAsALoneHostDoes: a fleet's leader reads the runner list by the lone host's
// rules (at recovery, then every 5th pass of an idle target), not on every pass: a fleet of one
// costs what a lone host does.
func TestFleetLeaderListsAsALoneHostDoes(t *testing.T) {
	f := &fakeFleet{}
	h := startWithFleet(t, f, 0)
	lists := func() int { return h.w.callCount("Runners", idA) }
	for range 5 {
		h.tick(poll, 1, "a")
	}
	if got := lists(); got != 2 {
		t.Fatalf("a recovery pass and 5 idle passes read the runner list %d times, want 2 (recovery, then every 5th)", got)
	}
	if q := h.w.callCount("Queued", idA); q != 6 {
		t.Fatalf("demand reads in 6 passes = %d, want 6", q)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.wants) != 6 {
		t.Fatalf("Begin was called %d times in 6 passes, want once a pass", len(f.wants))
	}
}

// TestFleetListNotGivenIsAskedAgain: a follower whose leader has no new list for it gets none;
// it asks again on every pass and publishes that it waits for one (the leader lists for it),
// and stops once it got one.
func TestFleetListNotGivenIsAskedAgain(t *testing.T) {
	f := &fakeFleet{noList: true}
	h := startWithFleet(t, f, 0)
	h.tick(poll, 1, "a")
	h.tick(poll, 1, "a")
	f.mu.Lock()
	wants, published := append([]bool(nil), f.wants...), f.published
	f.noList = false
	f.mu.Unlock()
	if len(wants) != 3 || !wants[0] || !wants[1] || !wants[2] {
		t.Fatalf("Begin asked %v in 3 passes without a list given, want a list every time", wants)
	}
	if !published.List {
		t.Fatalf("published %+v, want List: the host waits for a runner list", published)
	}
	if got := h.w.callCount("Runners", idA); got != 0 {
		t.Fatalf("the follower listed runners at GitHub %d times, want 0", got)
	}
	h.tick(poll, 1, "a") // given
	h.tick(poll, 1, "a")
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.wants); f.wants[n-1] || f.published.List {
		t.Fatalf("after a list was given: Begin asked %v, published %+v; want no list asked or waited for", f.wants, f.published)
	}
}

// TestFleetFollowerDoesNotRelaunchForAJobItsRunnerRan: a follower plans on the leader's view,
// which a long leader pass (slow launches) may leave behind. When its runner took the view's one
// queued job and ended after that view was read, the stale view still lists the job; the runner
// covers it as the view saw it, so the follower launches nothing for it. Once a view says the
// leader saw the take, a job it lists queued is demand again.
func TestFleetFollowerDoesNotRelaunchForAJobItsRunnerRan(t *testing.T) {
	f := &fakeFleet{follower: true}
	h := startWithFleet(t, f, 1)
	if got := h.byState("a")["started"]; got != 1 {
		t.Fatalf("started %d runners for the one queued job, want 1", got)
	}
	h.w.takeJobs(idA)
	h.w.finishJobs(idA)
	h.w.setQueued(idA, 1) // the leader has not read GitHub since: its view still lists the job
	h.tick(poll, 1, "a")
	if got := len(h.j.All()); got != 1 {
		t.Fatalf("%d attempts after the runner ran the job a stale view still lists, want the 1 that ran it", got)
	}
	f.mu.Lock()
	published := f.published
	f.saw = 1 // a new view read after the take; the job it lists is a new one
	f.mu.Unlock()
	if published.Took != 1 || published.Unseen != 1 || published.Idle != 0 {
		t.Fatalf("published %+v, want took 1 and the unseen runner published as such, not idle (the other hosts plan on the same view)", published)
	}
	h.tick(poll, 1, "a")
	if got := h.byState("a")["started"]; got != 1 {
		t.Fatalf("started %d runners for a job a view that saw the take lists, want 1", got)
	}
}

// TestFleetRestartedHostsTakesAreUnseen: a view read before this host restarted counts the takes
// of its earlier loop (saw 5), more than the new loop has made. Every take of the new loop is then
// unseen by it: the runner that ran the job the view still lists covers it, and nothing is
// launched again for it.
func TestFleetRestartedHostsTakesAreUnseen(t *testing.T) {
	f := &fakeFleet{follower: true, saw: 5}
	h := startWithFleet(t, f, 1)
	if got := h.byState("a")["started"]; got != 1 {
		t.Fatalf("started %d runners for the one queued job, want 1", got)
	}
	h.w.takeJobs(idA)
	h.w.finishJobs(idA)
	h.w.setQueued(idA, 1) // the view, read before the restart, still lists the job
	h.tick(poll, 1, "a")
	if got := len(h.j.All()); got != 1 {
		t.Fatalf("%d attempts after the runner ran the job a view from before the restart lists, want the 1 that ran it", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.published.Took != 1 || f.published.Unseen != 1 {
		t.Fatalf("published %+v, want took 1 and that take unseen", f.published)
	}
}

// startWarmFleet runs target a with min_idle 1 and the exit check on, in a fleet, after its
// first pass launched the warm runner.
func startWarmFleet(t *testing.T, f *fakeFleet) *harness {
	h := newHarness(t)
	h.s.deps.Fleet = f
	h.s.opts.ExitCheck = 2 * time.Second
	h.begin(cfgOf(with(baseTarget("a"), func(t *config.Target) { t.MinIdle = 1 })))
	return h
}

// TestFleetRunnerEndRefillsTheWarmPoolWithoutGitHub: in a fleet, a runner that ends between
// polls is concluded and the warm runner replaced at the next exit check by a light pass that
// reads nothing from GitHub, as on a lone host, and claims its launch through the fleet (Share
// after BeginLight), instead of waiting for the next poll, which would find the jobs queued
// meanwhile and read them in full.
func TestFleetRunnerEndRefillsTheWarmPoolWithoutGitHub(t *testing.T) {
	f := &fakeFleet{}
	h := startWarmFleet(t, f)
	if got := h.byState("a")["started"]; got != 1 {
		t.Fatalf("started %d runners, want the warm one", got)
	}
	h.w.setQueued(idA, 1)
	h.w.takeJobs(idA)
	h.w.finishJobs(idA) // the warm runner ran its job and ended
	before := h.githubCalls()
	f.mu.Lock()
	shares := len(f.shared)
	f.mu.Unlock()
	h.tick(2*time.Second, 1, "a")
	if got := h.byState("a"); got["cleaned"] != 1 || got["started"] != 1 {
		t.Fatalf("states after the exit check = %v, want the ended runner cleaned and a new warm one started", got)
	}
	after := h.githubCalls()
	if after["Queued"] != before["Queued"] || after["Runners"] != before["Runners"] {
		t.Fatalf("the exit check's pass read GitHub: %v -> %v", before, after)
	}
	if after["JITConfig"] != before["JITConfig"]+1 {
		t.Fatalf("JIT registrations in the exit check's pass = %d, want 1", after["JITConfig"]-before["JITConfig"])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lights != 1 || len(f.shared) != shares+1 || f.shared[len(f.shared)-1].Starting != 1 {
		t.Fatalf("BeginLight %d times, shares %v; want one light pass that claimed its launch", f.lights, f.shared[shares:])
	}
}

// TestFleetLightPassPlansOnTheFleetsView: a fleet's light pass plans on the jobs of the fleet's
// current view (BeginLight), not on its book, and this host's takes the view did not see cover
// them. The last poll saw one job queued and launched for it beside the warm runner; the job went
// to the warm runner, which ran it and ended.
func TestFleetLightPassPlansOnTheFleetsView(t *testing.T) {
	for _, tc := range []struct {
		name     string
		view     []Job
		saw      int64
		alone    bool
		launches int
		why      string
	}{
		{"the view lists the job the ended runner ran", []Job{{ID: 1}}, 0, false, 0,
			"the ended runner covers the job the view has not seen it take; the runner launched for it is the warm one"},
		{"a newer view saw the take and lists a new job", []Job{{ID: 2}}, 1, false, 1,
			"the new job is demand, the idle runner is the warm one"},
		{"a newer view lists that job and a new one", []Job{{ID: 1}, {ID: 2}}, 0, false, 1,
			"one of the two jobs is covered by the ended runner"},
		{"a view's busy job is no demand", []Job{{ID: 1, Runner: "someone"}}, 1, false, 0,
			"nothing is queued"},
		{"no view yet", nil, 0, false, 0, "no demand, and the idle runner is the warm one"},
		{"served alone: the book, as a lone host", []Job{{ID: 1}, {ID: 2}, {ID: 3}}, 0, true, 1,
			"the book still lists the poll's job (a lone host's light pass plans on it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeFleet{view: tc.view, saw: tc.saw, alone: tc.alone}
			h := startWarmFleet(t, f)
			h.w.setQueued(idA, 1)
			h.tick(poll, 1, "a") // the poll: demand 1 + min_idle 1, one warm runner: launches one
			if got := h.byState("a")["started"]; got != 2 {
				t.Fatalf("started %d runners after a poll with a job queued, want 2", got)
			}
			h.w.takeJobs(idA)
			h.w.finishJobs(idA)
			before := h.githubCalls()
			h.tick(2*time.Second, 1, "a")
			if got := h.byState("a")["cleaned"]; got != 1 {
				t.Fatalf("%d attempts cleaned after the exit check, want the ended runner", got)
			}
			after := h.githubCalls()
			if after["Queued"] != before["Queued"] || after["Runners"] != before["Runners"] {
				t.Fatalf("the exit check's pass read GitHub: %v -> %v", before, after)
			}
			if got := after["JITConfig"] - before["JITConfig"]; got != tc.launches {
				t.Fatalf("the light pass launched %d runners, want %d: %s", got, tc.launches, tc.why)
			}
		})
	}
}

// TestFleetLightPassCountsPeers: another host's idle runner covers the fleet's min_idle, so a
// light pass after this host's runner ended launches nothing; and a light pass whose claim the
// fleet refuses (its view moved on) launches nothing either.
func TestFleetLightPassCountsPeers(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *fakeFleet
	}{{"peer idle", &fakeFleet{}}, {"view moved", &fakeFleet{}}} {
		t.Run(tc.name, func(t *testing.T) {
			h := startWarmFleet(t, tc.f)
			tc.f.mu.Lock()
			if tc.name == "peer idle" {
				tc.f.peers = []PeerSupply{{Host: "h-a", Idle: 1, Free: 3}}
			} else {
				tc.f.moved = true
			}
			tc.f.mu.Unlock()
			h.w.setQueued(idA, 1)
			h.w.takeJobs(idA)
			h.w.finishJobs(idA)
			before := h.githubCalls()
			h.tick(2*time.Second, 1, "a")
			if got := h.byState("a"); got["cleaned"] != 1 || got["started"] != 0 {
				t.Fatalf("states after the exit check = %v, want the ended runner cleaned and nothing started", got)
			}
			if after := h.githubCalls(); after["JITConfig"] != before["JITConfig"] {
				t.Fatalf("JIT registrations in the light pass = %d, want 0", after["JITConfig"]-before["JITConfig"])
			}
		})
	}
}

// TestFleetLightPassCoversTheJobItsRunnerRan: a follower's runner took a job the fleet's view
// lists and ended; its light pass launches nothing for the job, and it publishes the ended runner
// as still covering the view's queued job (Took one past what the view saw), so another host's
// full pass on that view does not launch for a job already run.
func TestFleetLightPassCoversTheJobItsRunnerRan(t *testing.T) {
	f := &fakeFleet{follower: true, view: []Job{{ID: 1}}}
	h := startWarmFleet(t, f)
	h.w.setQueued(idA, 1)
	h.tick(poll, 1, "a") // the view lists one job: demand 1 + min_idle 1, one warm runner: one more
	if got := h.byState("a")["started"]; got != 2 {
		t.Fatalf("started %d runners after a poll with a job queued, want 2", got)
	}
	h.w.takeJobs(idA)
	h.w.finishJobs(idA)
	before := h.githubCalls()
	h.tick(2*time.Second, 1, "a") // the exit check's light pass
	if after := h.githubCalls(); after["JITConfig"] != before["JITConfig"] || after["Queued"] != before["Queued"] {
		t.Fatalf("the exit check's pass: %v -> %v, want no launch and no read", before, after)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lights != 1 || f.published.Took != 1 || f.published.Idle != 1 || f.published.Unseen != 1 {
		t.Fatalf("after %d light passes published %+v, want took 1, idle 1 and unseen 1: the ended runner covers the job the view still lists", f.lights, f.published)
	}
}

// TestFleetLightPassRefillsBesideUnseenRunners: runners counted as covering the view's queued jobs
// (unseen takes) do not count as the warm pool: when every runner ran a job and ended, the light
// pass still launches the warm runner min_idle asks for.
func TestFleetLightPassRefillsBesideUnseenRunners(t *testing.T) {
	f := &fakeFleet{follower: true, view: []Job{{ID: 1}}}
	h := startWarmFleet(t, f)
	h.w.setQueued(idA, 1)
	h.tick(poll, 1, "a") // two runners: one for the view's job, one warm
	h.w.setQueued(idA, 2)
	h.w.takeJobs(idA) // both take a job (the view's and a newer one) and end
	h.w.finishJobs(idA)
	before := h.githubCalls()
	h.tick(2*time.Second, 1, "a")
	if after := h.githubCalls(); after["JITConfig"] != before["JITConfig"]+1 {
		t.Fatalf("JIT registrations in the light pass = %d, want 1: the warm runner", after["JITConfig"]-before["JITConfig"])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.published.Took != 2 || f.published.Idle != 1 || f.published.Unseen != 1 {
		t.Fatalf("published %+v, want took 2, idle 1 (the new warm runner) and unseen 1 (covering the view's one job)", f.published)
	}
}
