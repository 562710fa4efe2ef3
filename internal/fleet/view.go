package fleet

import (
	"context"
	"encoding/json"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
)

// list is a runner list the leader read, and when it asked for it (its clock).
type list struct {
	runners []engine.Runner
	at      time.Time
}

// view is what the leader publishes: GitHub's runners of the target and its queued jobs. The
// leader lists runners only when it or another host needs a list (engine listNow, supply's
// List), so Runners is its latest list, read at Listed (zero: none yet), and a follower takes
// each list once.
type view struct {
	Host    string          `json:"host"`
	At      time.Time       `json:"at"`
	Listed  time.Time       `json:"listed,omitzero"`
	Runners []engine.Runner `json:"runners"`
	Jobs    []engine.Job    `json:"jobs"`
	// Set is a scale-set target's news from the queue (its Runners are then empty: scale-set
	// runners have no listing, each host knows its own).
	Set *SetNews `json:"set,omitempty"`
	// Saw is each other host's Took (its runners that took a job) as the leader's mirror had it
	// before it read Jobs: those jobs are out of the queue in this view. A follower's runners
	// that took a job since may have taken one this view still lists as queued, so they still
	// cover it in the follower's plan (engine.FleetPass.Share's saw): a view a long leader pass left
	// behind is not demand for the runners that already ran its jobs. Absent: 0.
	Saw map[string]int64 `json:"saw,omitempty"`
}

// Runners implements engine.FleetPass: a follower's list is the leader's view's, once per list
// the leader read; a leader's is read through inner and goes into the view it publishes.
// Registrations and deletions are always this host's own, through inner directly.
func (ps *passState) Runners(ctx context.Context, t config.Target, inner engine.Registrar) ([]engine.Runner, error) {
	f := ps.f
	if ps.role == roleFollower && ps.given.CompareAndSwap(true, false) {
		if t.ScaleSet == "" {
			return ps.view.Runners, nil
		}
		// A scale-set target's runners are each host's own knowledge, brought up to date with
		// what the leader's queue said of them.
		if src := f.o.Sets; src != nil && ps.view.Set != nil {
			src.HeardSet(t, *ps.view.Set)
		}
	}
	at := time.Now()
	rs, err := inner.Runners(ctx, t)
	if err == nil && ps.role == roleLeader {
		f.mu.Lock()
		f.lists[t.Name] = list{rs, at}
		f.mu.Unlock()
	}
	return rs, err
}

// Queued implements engine.FleetPass: a follower plans on the leader's view's jobs; a leader reads
// them through inner and publishes them as the view.
func (ps *passState) Queued(ctx context.Context, t config.Target, inner engine.Demand) ([]engine.Job, error) {
	f := ps.f
	switch ps.role {
	case roleFollower:
		return ps.view.Jobs, nil
	case roleLeader:
		// What the other hosts' runners had taken before the read: the read shows those jobs
		// taken. Read first, so a take the mirror has not shown yet counts as one after the read.
		saw, own := f.took(ps.ep, t.Name), f.ownTook(t.Name)
		jobs, err := inner.Queued(ctx, t)
		if err == nil {
			f.mu.Lock()
			f.ownSaw[t.Name] = own // the view's Saw of this host (BeginLight)
			f.mu.Unlock()
			f.mu.Lock()
			l := f.lists[t.Name]
			f.mu.Unlock()
			v := view{Host: f.host, Listed: l.at, Runners: l.runners, Jobs: jobs, Saw: saw}
			if src := f.o.Sets; src != nil && t.ScaleSet != "" {
				n := src.SetNews(t)
				v.Runners, v.Listed, v.Set = nil, time.Time{}, &n
			}
			f.publishView(ctx, ps, t.Name, v)
		}
		return jobs, err
	}
	return inner.Queued(ctx, t)
}

// What viewFor found.
const (
	gotNothing    = iota // no view in time
	gotView              // the leader's view
	gotLeadership        // this host was elected meanwhile: it reads GitHub itself
)

// viewFor waits for the leader's view of target, for at most two lease TTLs (a leader just elected
// publishes on its first pass), or until this host is elected itself. With gotNothing, the
// entry's revision is the view's (0: none) for Share to fence on.
func (f *Fleet) viewFor(ctx context.Context, ep *epoch, target string) (view, entry, int) {
	ctx, cancel := context.WithTimeout(ctx, 2*f.ttl)
	defer cancel()
	for {
		ch := ep.mir.next()
		if f.leads(target) {
			return view{}, entry{}, gotLeadership
		}
		e, ok := ep.mir.get(f.keys.view(target))
		if ok {
			var v view
			if json.Unmarshal([]byte(e.val), &v) == nil {
				return v, e, gotView
			}
		}
		select {
		case <-ctx.Done():
			return view{}, e, gotNothing
		case <-ep.ctx.Done():
			return view{}, e, gotNothing
		case <-ch:
		case <-time.After(50 * time.Millisecond): // an election is not a key change of ours
		}
	}
}

// publishView writes the leader's view under its lease, only while its election key is still
// there (a deposed leader publishes nothing), and only when what it shows changed.
func (f *Fleet) publishView(ctx context.Context, ps *passState, target string, v view) {
	ep := ps.ep
	f.mu.Lock()
	c := ep.campaigns[target]
	var key string
	var rev int64
	if c != nil {
		key, rev = c.key, c.rev
	}
	f.mu.Unlock()
	if key == "" {
		return
	}
	if old, ok := ep.mir.get(f.keys.view(target)); ok {
		var ov view
		if json.Unmarshal([]byte(old.val), &ov) == nil && sameView(ov, v) {
			ps.viewMod = old.mod
			return
		}
	}
	v.At = time.Now().UTC()
	b, _ := json.Marshal(v)
	octx, cancel := f.opCtx(ctx)
	defer cancel()
	resp, err := f.client.Txn(octx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
		Then(clientv3.OpPut(f.keys.view(target), string(b), clientv3.WithLease(ep.sess.Lease()))).Commit()
	if err != nil {
		f.opFailed(ctx, ep, err)
		return
	}
	if resp.Succeeded {
		ps.viewMod = resp.Header.Revision
		f.noteWrite(resp.Header.Revision)
	}
}

// sameView ignores only the time of publishing: a new list is news even with the same runners
// (a follower waits for it), and so is a new Saw (a follower's runners that took a job stop
// covering the view's queue only once a view says the leader saw them).
func sameView(a, b view) bool {
	ja, _ := json.Marshal(view{Listed: a.Listed, Runners: a.Runners, Jobs: a.Jobs, Set: a.Set, Saw: a.Saw})
	jb, _ := json.Marshal(view{Listed: b.Listed, Runners: b.Runners, Jobs: b.Jobs, Set: b.Set, Saw: b.Saw})
	return string(ja) == string(jb)
}
