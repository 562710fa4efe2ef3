package fleet

import (
	"context"
	"encoding/json"
	"sort"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
)

// supply is what supply/<target>/<host> holds.
type supply struct {
	Starting int   `json:"starting"`
	Idle     int   `json:"idle"`
	Free     int   `json:"free"`
	List     bool  `json:"list,omitempty"`   // the host waits for a runner list (engine.PeerSupply.List)
	Took     int64 `json:"took,omitempty"`   // engine.PeerSupply.Took: the leader's view says which it saw (view.Saw)
	Unseen   int   `json:"unseen,omitempty"` // engine.PeerSupply.Unseen: takes that cover the view's queued jobs
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
