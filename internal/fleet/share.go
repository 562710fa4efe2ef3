package fleet

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
)

// role is how this host serves a target in one pass.
type role int

const (
	roleAlone    role = iota // not joined, or the target's config differs from the fleet's
	roleLeader               // reads GitHub and publishes the view
	roleFollower             // reads the leader's view from etcd
	roleReader               // no leader's view in time: reads GitHub itself, still shares supply
)

// passState is one pass of a target's loop, from its Begin or BeginLight to its Publish: the
// engine.FleetPass the pass holds. The fleet keeps no pass between calls.
type passState struct {
	f       *Fleet
	role    role
	ep      *epoch
	viewMod int64 // the view's revision the pass read (0: none); Share is fenced on it
	view    view
	// light: a light pass (BeginLight); saw is then this host's takes the current view saw.
	light bool
	saw   int64
	// given: Begin handed a follower the view's runner list; the pass's Runners call answers
	// with it, once.
	given atomic.Bool
}

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

// supply is what supply/<target>/<host> holds.
type supply struct {
	Starting int   `json:"starting"`
	Idle     int   `json:"idle"`
	Free     int   `json:"free"`
	List     bool  `json:"list,omitempty"`   // the host waits for a runner list (engine.PeerSupply.List)
	Took     int64 `json:"took,omitempty"`   // engine.PeerSupply.Took: the leader's view says which it saw (view.Saw)
	Unseen   int   `json:"unseen,omitempty"` // engine.PeerSupply.Unseen: takes that cover the view's queued jobs
}

// roleOf decides how this host serves t now, and raises or clears the alone alert.
func (f *Fleet) roleOf(t config.Target) (role, *epoch) {
	f.mu.Lock()
	ep := f.ep
	c := (*campaign)(nil)
	if ep != nil {
		c = ep.campaigns[t.Name]
	}
	elected := c != nil && c.elected
	f.mu.Unlock()
	if ep == nil {
		return roleAlone, nil
	}
	if elected {
		f.setAlone(t.Name, false)
		return roleLeader, ep
	}
	lead, ok := ep.mir.oldest(f.keys.leader(t.Name))
	if !ok {
		return roleFollower, ep // no leader yet: wait for one (viewFor)
	}
	fleetFP, ok := ep.mir.get(f.keys.config(t.Name, lead.val))
	differs := ok && fleetFP.val != Fingerprint(t)
	f.setAlone(t.Name, differs)
	if differs {
		return roleAlone, ep
	}
	return roleFollower, ep
}

func (f *Fleet) setAlone(target string, alone bool) {
	f.mu.Lock()
	was := f.alone[target]
	f.alone[target] = alone
	f.mu.Unlock()
	if was == alone {
		return
	}
	if alone {
		f.log.Warn("fleet: this host's config of the target differs from the fleet's (a rollout in progress?); serving it alone until they agree", "target", target)
	} else if was {
		f.log.Info("fleet: the target's config agrees with the fleet's again; sharing it", "target", target)
	}
	if f.o.OnAlone != nil {
		f.o.OnAlone(target, alone)
	}
}

// Begin implements engine.Fleet: it settles how this host serves t in the pass about to read
// GitHub, and whether the pass reads the runner list. A leader lists when its own rules want to
// or another host waits for a list; a follower takes the list of the leader's view when the
// leader read one it has not taken yet; a scale-set follower always "lists" (its runners are
// its own knowledge, no GitHub read) to hear the leader's news of them.
func (f *Fleet) Begin(ctx context.Context, t config.Target, want bool) (engine.FleetPass, bool, time.Duration) {
	ro, ep := f.roleOf(t)
	ps := &passState{f: f, role: ro, ep: ep}
	if ro == roleFollower {
		v, e, got := f.viewFor(ctx, ep, t.Name)
		switch got {
		case gotView:
			ps.view, ps.viewMod = v, e.mod
			if t.ScaleSet != "" {
				ps.given.Store(true)
				return ps, true, 0
			}
			if v.Listed.IsZero() || !f.newList(t.Name, v) {
				return ps, false, 0
			}
			ps.given.Store(true)
			// How old GitHub's answer is: at the leader when it published (one clock), then in
			// the mirror since it arrived (this host's).
			return ps, true, max(v.At.Sub(v.Listed), 0) + time.Since(e.seen)
		case gotLeadership:
			ps.role = roleLeader
		default:
			// No leader published in time: read GitHub this once, and still claim through the
			// fleet (fenced on there being no view), so the hosts do not each cover all demand.
			ps.role, ps.viewMod = roleReader, e.mod
			f.log.Warn("fleet: no view of the target from a leader in time; reading GitHub directly", "target", t.Name)
			return ps, want, 0
		}
	}
	if ps.role == roleLeader {
		// The leader's pass is fenced on the view it holds now; its own Queued replaces that
		// with the view it publishes. A pass that reads no jobs (a drain, a failed read) still
		// decides on a view of its own, not on "no view".
		if e, ok := ep.mir.get(f.keys.view(t.Name)); ok {
			ps.viewMod = e.mod
		}
		if !want {
			peers, _ := f.peers(ep, t.Name)
			for _, p := range peers {
				want = want || p.List
			}
		}
	}
	return ps, want, 0
}

// BeginLight implements engine.Fleet: a light pass of t reads nothing from GitHub, so it needs
// no leader's view to wait for; it plans on the view as the mirror has it now (none: on no jobs),
// and its Share is fenced on that view, which only a view published during the pass replaces.
// The pass plans on the view's queued jobs, so its decide is told which of this host's takes the
// view saw, whoever leads: the view's Saw of this host, or, on a view this host published, its
// Took when it read those jobs. This host's runners that took a job since (the one whose end
// asked for the pass among them) then cover the view's queued jobs, are published as doing so,
// and neither this pass nor another host's pass on that view launches again for a job they ran.
func (f *Fleet) BeginLight(t config.Target) (engine.FleetPass, []engine.Job, bool) {
	ro, ep := f.roleOf(t)
	ps := &passState{f: f, role: ro, ep: ep, light: true, saw: -1}
	if ep == nil || ro == roleAlone {
		return ps, nil, false
	}
	ps.saw = 0 // no view, or one that says nothing of this host: every take is unseen
	e, ok := ep.mir.get(f.keys.view(t.Name))
	if !ok {
		return ps, nil, true
	}
	ps.viewMod = e.mod
	var v view
	if json.Unmarshal([]byte(e.val), &v) != nil {
		return ps, nil, true
	}
	f.mu.Lock()
	if v.Host == f.host {
		ps.saw = f.ownSaw[t.Name]
	} else {
		ps.saw = v.Saw[f.host]
	}
	f.mu.Unlock()
	return ps, v.Jobs, true
}

// ownTook is this host's Took of target as last published (0: none).
func (f *Fleet) ownTook(target string) int64 {
	f.mu.Lock()
	b := f.lastPub[target]
	f.mu.Unlock()
	var s supply
	if json.Unmarshal([]byte(b), &s) != nil {
		return 0
	}
	return s.Took
}

// newList records that this host takes the view's list, and says whether it had not yet.
func (f *Fleet) newList(target string, v view) bool {
	id := v.Host + " " + v.Listed.Format(time.RFC3339Nano)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.taken[target] == id {
		return false
	}
	f.taken[target] = id
	return true
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

// took is every other host's Took of target as the mirror has it (hosts with none left out).
func (f *Fleet) took(ep *epoch, target string) map[string]int64 {
	peers, _ := f.peers(ep, target)
	var out map[string]int64
	for _, p := range peers {
		if p.Took > 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[p.Host] = p.Took
		}
	}
	return out
}

func (f *Fleet) noteWrite(rev int64) {
	f.mu.Lock()
	f.wrote = max(f.wrote, rev)
	f.mu.Unlock()
}

// Share implements engine.FleetPass: decide runs on the other hosts' supply as the mirror has it, and
// this host's result is written only if no supply of the target and not the view changed since
// (one etcd transaction comparing revisions); a conflict catches the mirror up and decides again.
// Alone (not joined, a differing config, no view), decide runs on no peers: today's single host.
// A follower's decide is told how many of its runners' takes the view's read saw (view.Saw); a
// host that read GitHub itself this pass is told -1 (its read is its own, as a lone host's).
func (ps *passState) Share(ctx context.Context, t config.Target, decide func(string, []engine.PeerSupply, int64) engine.PeerSupply) bool {
	f := ps.f
	if ps.role == roleAlone || ps.ep == nil {
		decide(f.host, nil, -1)
		f.withdraw(ctx, t.Name)
		return true
	}
	ep := ps.ep
	f.mu.Lock()
	wrote := f.wrote
	f.mu.Unlock()
	octx, cancel := f.opCtx(ctx)
	defer cancel()
	if !ep.mir.waitRev(octx, max(wrote, ps.viewMod)) {
		decide(f.host, nil, -1)
		// Cut by the caller (a stop, a pass past its call timeout): nothing is decided, as for
		// a cut transaction below. Otherwise the mirror lags etcd: this pass decides alone.
		return ctx.Err() == nil
	}
	saw := int64(-1)
	switch {
	case ps.light:
		saw = ps.saw
	case ps.role == roleFollower:
		saw = ps.view.Saw[f.host]
	}
	for range 5 {
		peers, rev := f.peers(ep, t.Name)
		if e, _ := ep.mir.get(f.keys.view(t.Name)); e.mod != ps.viewMod {
			decide(f.host, peers, saw)
			return false // a newer view exists: the next pass decides on it
		}
		mine := decide(f.host, peers, saw)
		b, _ := json.Marshal(supplyOf(mine))
		resp, err := f.client.Txn(octx).If(
			clientv3.Compare(clientv3.ModRevision(f.keys.supplies(t.Name)), "<", rev+1).WithPrefix(),
			clientv3.Compare(clientv3.ModRevision(f.keys.view(t.Name)), "=", ps.viewMod),
		).Then(clientv3.OpPut(f.keys.supply(t.Name, f.host), string(b), clientv3.WithLease(ep.sess.Lease()))).Commit()
		if err != nil {
			if ctx.Err() != nil {
				decide(f.host, nil, -1)
				return false // the caller gave up: nothing is decided, etcd is not at fault
			}
			f.failed(ep, err)
			decide(f.host, nil, -1) // etcd is gone: this host is alone now
			return true
		}
		if resp.Succeeded {
			f.noteWrite(resp.Header.Revision)
			f.mu.Lock()
			f.lastPub[t.Name] = string(b)
			f.mu.Unlock()
			return true
		}
		if !ep.mir.waitRev(octx, resp.Header.Revision) {
			break
		}
	}
	decide(f.host, nil, -1)
	return false
}

// supplyOf and peer convert between the engine's PeerSupply and what etcd holds: one place for
// the fields both must carry.
func supplyOf(p engine.PeerSupply) supply {
	return supply{Starting: p.Starting, Idle: p.Idle, Free: p.Free, List: p.List, Took: p.Took, Unseen: p.Unseen}
}

func (s supply) peer(host string) engine.PeerSupply {
	return engine.PeerSupply{Host: host, Starting: s.Starting, Idle: s.Idle, Free: s.Free, List: s.List, Took: s.Took, Unseen: s.Unseen}
}

// peers is the other hosts' supply of target, as the mirror has it, with the mirror's revision.
func (f *Fleet) peers(ep *epoch, target string) ([]engine.PeerSupply, int64) {
	es, rev := ep.mir.prefix(f.keys.supplies(target))
	var out []engine.PeerSupply
	for host, e := range es {
		if host == f.host {
			continue
		}
		var s supply
		if json.Unmarshal([]byte(e.val), &s) != nil {
			continue
		}
		out = append(out, s.peer(host))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out, rev
}

// Publish implements engine.FleetPass: this host's supply of t after a pass, written when it changed.
func (ps *passState) Publish(ctx context.Context, t config.Target, mine engine.PeerSupply) {
	f := ps.f
	if ps.role == roleAlone || ps.ep == nil {
		f.withdraw(ctx, t.Name)
		return
	}
	b, _ := json.Marshal(supplyOf(mine))
	f.mu.Lock()
	same := f.lastPub[t.Name] == string(b)
	f.mu.Unlock()
	if same {
		return
	}
	octx, cancel := f.opCtx(ctx)
	defer cancel()
	resp, err := f.client.Put(octx, f.keys.supply(t.Name, f.host), string(b), clientv3.WithLease(ps.ep.sess.Lease()))
	if err != nil {
		f.opFailed(ctx, ps.ep, err)
		return
	}
	f.noteWrite(resp.Header.Revision)
	f.mu.Lock()
	f.lastPub[t.Name] = string(b)
	f.mu.Unlock()
}

// withdraw removes this host's supply of a target it serves alone: its runners answer to another
// config, so the fleet must not count them.
func (f *Fleet) withdraw(ctx context.Context, target string) {
	f.mu.Lock()
	ep := f.ep
	_, had := f.lastPub[target]
	delete(f.lastPub, target)
	f.mu.Unlock()
	if ep == nil || !had {
		return
	}
	octx, cancel := f.opCtx(ctx)
	defer cancel()
	if _, err := f.client.Delete(octx, f.keys.supply(target, f.host)); err != nil {
		f.opFailed(ctx, ep, err)
	}
}

// Announce tells the fleet that this host received a webhook delivery for target, so the target's
// leader reads GitHub now wherever it runs.
func (f *Fleet) Announce(ctx context.Context, target string) {
	f.mu.Lock()
	ep := f.ep
	f.mu.Unlock()
	if ep == nil || f.leads(target) {
		return
	}
	octx, cancel := f.opCtx(ctx)
	defer cancel()
	if _, err := f.client.Put(octx, f.keys.wake(target), f.host); err != nil {
		f.opFailed(ctx, ep, err)
	}
}

// leaderOf is the host leading target in the mirror ("" if none).
func leaderOf(ep *epoch, k keys, target string) string {
	e, ok := ep.mir.oldest(k.leader(target))
	if !ok {
		return ""
	}
	return strings.TrimSpace(e.val)
}
