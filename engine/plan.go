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
	need := max(in.Demand, 0) + max(in.MinIdle, 0)
	out.Wanted = max(need-len(fresh)-in.Starting, 0)
	out.Start = max(min(out.Wanted, in.TargetFree, in.HostFree), 0)

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
