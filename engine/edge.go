package engine

import (
	"context"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

// edge is where a target loop's passes meet the other hosts of a fleet (Deps.Fleet), at the edges
// of each pass only: it starts the pass (begin, light, quiet) and hands back the pass's side of
// the edge (via), through which the pass reads GitHub, decides and, once it acted, publishes.
// The pass calls it whatever the host is; a host alone has lone, which asks nothing and plans
// plan(in), so the pass has no fleet branch and a fleet feature changes this file, not pass.go.
// One edge per loop: what it keeps (the takes the fleet's view must see) is the loop's, kept
// across its passes; what one pass needs of the fleet is in that pass's via, not kept anywhere.
type edge interface {
	// servesLight says whether a delivery is served by a light pass, also beside a full read in
	// flight (loop.read): a host alone plans on its own book. In a fleet a delivery asks for a
	// full pass, whose read a follower takes from the leader's view, and light passes wait for it.
	servesLight() bool
	// begin starts a full pass: whether it reads the runner list given the loop's own rules
	// (list), how old that list is when another host read it, and whether a list wanted and not
	// given must be asked for again on the next pass.
	begin(ctx context.Context, t config.Target, list bool) (p via, read bool, age time.Duration, again bool)
	// light starts a light pass on the book's view v: the view it plans on is its own, or the
	// fleet's current jobs still queued as far as book knows (githubView.fleetLight).
	light(t config.Target, v githubView, book *jobBook) (via, githubView)
	// quiet starts a pass that reads nothing and plans nothing new (a draining loop that owns
	// nothing): it still tells the fleet what is left.
	quiet(t config.Target) via
	// tookJob counts a runner of the loop that took a job (left starting or idle for busy or an
	// end): the fleet's view must see it (PeerSupply.Took).
	tookJob()
}

// via is one pass's side of the edge: how it reads GitHub, decides and tells what it did.
type via interface {
	runners(ctx context.Context, t config.Target) ([]Runner, error)
	queued(ctx context.Context, t config.Target) ([]Job, error)
	// decide plans the pass on in; launching says whether it may start runners, listNext
	// whether the loop waits for a runner list.
	decide(ctx context.Context, t config.Target, in planInput, launching, listNext bool) planOutput
	// publish tells the other hosts what this host has for t once the pass acted; in is read
	// only when there is someone to tell.
	publish(ctx context.Context, t config.Target, in func() planInput, launching, listNext bool)
}

// edgeFor is the edge of a new loop: lone without a fleet.
func (s *Supervisor) edgeFor() edge {
	if s.deps.Fleet == nil {
		return lone{s}
	}
	return &shared{s: s, f: s.deps.Fleet}
}

// lone is a host alone: it reads, decides and acts on its own. It is its passes' via too.
type lone struct{ s *Supervisor }

func (lone) servesLight() bool { return true }
func (e lone) begin(_ context.Context, _ config.Target, list bool) (via, bool, time.Duration, bool) {
	return e, list, 0, false
}
func (e lone) light(_ config.Target, v githubView, _ *jobBook) (via, githubView) { return e, v }
func (e lone) quiet(config.Target) via                                           { return e }
func (lone) tookJob()                                                            {}
func (e lone) runners(ctx context.Context, t config.Target) ([]Runner, error) {
	return e.s.deps.Registrar.Runners(ctx, t)
}
func (e lone) queued(ctx context.Context, t config.Target) ([]Job, error) {
	return e.s.deps.Demand.Queued(ctx, t)
}
func (lone) decide(_ context.Context, _ config.Target, in planInput, _, _ bool) planOutput {
	return plan(in)
}
func (lone) publish(context.Context, config.Target, func() planInput, bool, bool) {}

// shared is a host of a fleet: Fleet.Begin or BeginLight settles its role for a pass and
// returns the pass (sharedPass), whose reads answer as that role does, whose plan runs inside
// FleetPass.Share on the other hosts' supply, and whose outcome FleetPass.Publish reports.
type shared struct {
	s      *Supervisor
	f      Fleet
	took   int64 // runners that took a job since the loop started: PeerSupply.Took
	unseen int   // of those, the ones the last decided pass's view was read before (planInput.Unseen)
}

// sharedPass is one pass of a fleet's host.
type sharedPass struct {
	e *shared
	p FleetPass
}

func (*shared) servesLight() bool { return false }

func (e *shared) begin(ctx context.Context, t config.Target, list bool) (via, bool, time.Duration, bool) {
	p, read, age := e.f.Begin(ctx, t, list)
	return sharedPass{e, p}, read, age, list && !read // a follower whose leader has not listed since: ask again (published)
}

func (e *shared) quiet(t config.Target) via {
	p, _, _ := e.f.BeginLight(t)
	return sharedPass{e, p}
}

func (sp sharedPass) runners(ctx context.Context, t config.Target) ([]Runner, error) {
	return sp.p.Runners(ctx, t, sp.e.s.deps.Registrar)
}

func (sp sharedPass) queued(ctx context.Context, t config.Target) ([]Job, error) {
	return sp.p.Queued(ctx, t, sp.e.s.deps.Demand)
}

// light: in a fleet a light pass comes only when a watched runner ended (a delivery asks
// for a full pass). It concludes the runner and plans on the fleet's current view of GitHub
// (Fleet.BeginLight hands its queued jobs), not on the book, which is as old as this host's last
// full pass: a fleet of one then replaces its warm runner and launches for the jobs its last
// poll saw when a runner ends, as a lone host does, instead of leaving them to its next poll,
// which would find them still queued and read them in full (the bench's fleet rows). The runner
// that just ended may have run one of the view's jobs (GitHub gave it after the view was read);
// it and every other take of this host the view did not see count as covering the view's
// queued jobs (planInput.Unseen, told by Share), and peers publish theirs the same way, so no
// job the fleet's runners already ran is launched for again. A light pass launches its share
// on this host (planInput.Here): no other host is passing to take a share placed on it.
func (e *shared) light(t config.Target, v githubView, book *jobBook) (via, githubView) {
	p, jobs, ok := e.f.BeginLight(t)
	if ok {
		v.jobs, v.fleetLight = book.stillQueued(jobs), true
		v.demand = len(v.jobs)
	}
	return sharedPass{e, p}, v
}

// decide runs the plan inside the fleet's transaction, on the other hosts' supply, and what it
// starts and keeps idle is published with it. A draining or monitor-mode pass starts nothing and
// reaps every idle runner whatever the fleet holds, so it asks no one: a refused Share would drop
// its reaps and stall the drain (TestFleetDrainReapsWhateverTheFleetSays); publish still reports
// what is left.
func (sp sharedPass) decide(ctx context.Context, t config.Target, in planInput, launching, listNext bool) planOutput {
	e := sp.e
	e.unseen = 0
	if in.Draining || in.Monitor {
		return plan(in)
	}
	var out planOutput
	ok := sp.p.Share(ctx, t, func(self string, peers []PeerSupply, saw int64) PeerSupply {
		in.Peers, in.Self, in.Unseen = peers, self, 0
		if saw > e.took {
			// The view counted the takes of an earlier loop of this host (a restart, a new
			// identity) and none of this one's: it was read before any of them.
			saw = 0
		}
		if saw >= 0 {
			in.Unseen = int(min(e.took-saw, int64(max(in.Demand, 0))))
		}
		out = plan(in)
		// The unseen runners are published: the other hosts plan on the same view, so they
		// count them against the same queued jobs.
		mine := PeerSupply{Starting: in.Starting, Idle: len(in.Idle) - len(out.Reap), List: listNext, Took: e.took, Unseen: in.Unseen}
		if launching {
			mine.Starting += out.Start
			mine.Free = max(min(in.TargetFree, in.HostFree)-out.Start, 0)
		}
		return mine
	})
	e.unseen = in.Unseen
	if !ok {
		return planOutput{Wanted: out.Wanted}
	}
	return out
}

// publish replaces what decide announced with the journal's count after the pass acted (a
// launch may have failed).
func (sp sharedPass) publish(ctx context.Context, t config.Target, input func() planInput, launching, listNext bool) {
	e, in := sp.e, input()
	mine := PeerSupply{Starting: in.Starting, List: listNext, Took: e.took, Unseen: e.unseen}
	for _, r := range in.Idle {
		if !r.Stale {
			mine.Idle++
		}
	}
	if launching {
		mine.Free = max(min(in.TargetFree, in.HostFree), 0)
	}
	sp.p.Publish(ctx, t, mine)
}

func (e *shared) tookJob() { e.took++ }
