package fleet

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"time"

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
