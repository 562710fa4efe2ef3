package engine

import (
	"sort"
	"time"
)

// idleRunner is one runner this target owns that is started and not busy.
type idleRunner struct {
	ID        string
	IdleSince time.Time
	Stale     bool // launched under a different policy fingerprint
}

// planInput is everything one pass knows; plan is pure so its rules have table tests (plan_test.go).
type planInput struct {
	Now         time.Time
	Monitor     bool // mode = monitor: observe only, once what the target owns is drained
	Draining    bool // removed, disabled, shutdown or upgrade: start nothing, reap every idle runner
	Demand      int  // queued jobs matching the target's labels
	MinIdle     int
	IdleTimeout time.Duration // <= 0: idle runners are never reaped for age
	Idle        []idleRunner
	Starting    int // planned or registered: launched, not yet idle
	TargetFree  int // target max_runners minus every live attempt of the target
	HostFree    int // host max_runners minus every live attempt on the host
	// Peers is the other hosts' supply of this target in a fleet (nil: this host is alone). Their
	// starting and idle runners cover demand and min_idle first; what is left is placed on the
	// hosts with the most free capacity, Self among them.
	Peers []PeerSupply
	Self  string
	// Unseen is how many of this host's runners took a job after the fleet's view of GitHub was
	// read (at most Demand): the view may still list their jobs as queued, so they cover that
	// demand as the view saw them, idle or starting. Without it a follower planning on a view a
	// long leader pass left behind launches again for jobs its runners already ran. With the
	// peers' Unseen they cover at most Demand: each took one job, a queued one of the view or a
	// newer one, so the view's queue left is at least Demand minus all of them, and none of them
	// is a warm runner (a stream's takes must not starve the warm pool until the next view).
	Unseen int
	// Here: a fleet's light pass (fleetLight) launches what the fleet wants on this host, not
	// only its placed share: no other host is passing to take a share placed on it, and the
	// fleet's transaction makes a host deciding at once see this launch.
	Here bool
	// Change is when the target's schedule next changes what is in force (zero: never); the
	// next full pass is due by then (byChange). MinIdle and TargetFree are already the values
	// in force now.
	Change time.Time
}

// reapReason says why an idle runner is deregistered.
type reapReason string

const (
	reapIdleTimeout reapReason = "idle past idle_timeout"
	reapStale       reapReason = "policy changed"
	reapDrain       reapReason = "target draining"
	reapMonitor     reapReason = "target in monitor mode"
)

type reap struct {
	ID     string
	Reason reapReason
}

// planOutput: how many runners to launch and which idle ones to deregister.
type planOutput struct {
	Wanted int // runners needed beyond what is idle or starting
	Start  int // min(Wanted, TargetFree, HostFree)
	Reap   []reap
}

// plan decides one pass. Queued jobs and min_idle are covered first by fresh idle runners and by
// runners still starting; the rest is wanted, bounded by both capacities. Stale idle runners are
// replaced (reaped now, their successor started in the same pass if capacity allows). Of the fresh
// idle runners, the newest needed ones are kept and older ones past idle_timeout are reaped.
// A draining or monitor-mode target starts nothing and reaps every idle runner it owns (busy
// ones finish), so a target switched to monitor mode drains first and then only observes.
func plan(in planInput) planOutput {
	var out planOutput
	var fresh []idleRunner
	for _, r := range in.Idle {
		switch {
		case in.Draining:
			out.Reap = append(out.Reap, reap{r.ID, reapDrain})
		case in.Monitor:
			out.Reap = append(out.Reap, reap{r.ID, reapMonitor})
		case r.Stale:
			out.Reap = append(out.Reap, reap{r.ID, reapStale})
		default:
			fresh = append(fresh, r)
		}
	}
	if in.Draining || in.Monitor {
		return out
	}
	demand, unseen, peers := max(in.Demand, 0), max(in.Unseen, 0), 0
	for _, p := range in.Peers {
		unseen += max(p.Unseen, 0)
		peers += p.Starting + p.Idle
	}
	need := max(demand-min(unseen, demand)+max(in.MinIdle, 0)-peers, 0)
	out.Wanted = max(need-len(fresh)-in.Starting, 0)
	share := out.Wanted
	if !in.Here {
		share = place(out.Wanted, in.Self, min(in.TargetFree, in.HostFree), in.Peers)
	}
	out.Start = max(min(share, in.TargetFree, in.HostFree), 0)

	// Keep the newest `need` idle runners: they have the most idle time left.
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].IdleSince.After(fresh[j].IdleSince) })
	if in.IdleTimeout > 0 {
		for i, r := range fresh {
			if i >= need && in.Now.Sub(r.IdleSince) >= in.IdleTimeout {
				out.Reap = append(out.Reap, reap{r.ID, reapIdleTimeout})
			}
		}
	}
	return out
}

// place is this host's share of w runners the fleet still wants: each goes in turn to the host with
// the most free capacity left, ties to the lower host name. Every host applies it to the same
// snapshot, so their shares add up to w (or to the fleet's free capacity). Alone, the share is w.
func place(w int, self string, selfFree int, peers []PeerSupply) int {
	if len(peers) == 0 {
		return w
	}
	hosts := append([]PeerSupply{{Host: self, Free: selfFree}}, peers...)
	mine := 0
	for range w {
		best := -1
		for i, h := range hosts {
			if h.Free > 0 && (best < 0 || h.Free > hosts[best].Free || (h.Free == hosts[best].Free && h.Host < hosts[best].Host)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		hosts[best].Free--
		if best == 0 {
			mine++
		}
	}
	return mine
}
