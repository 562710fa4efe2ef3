package engine

import (
	"sync"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// claims is what each target's loop last said it wants, for journal.Room's fair share: the loops
// of one host compete for its slots, and each asks the room for its own on what the others want.
// The journal's slot leases stay the hard bound (Plan); a claim only holds a loop back.
type claims struct {
	mu     sync.Mutex
	wants  map[string]int  // target -> runners wanted beyond those it holds (only > 0)
	passed map[string]bool // targets whose loop has claimed in this run (wanting or not)
}

func newClaims() *claims { return &claims{wants: map[string]int{}, passed: map[string]bool{}} }

// set records that target wants n more runners (0: none).
func (c *claims) set(target string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.passed[target] = true
	if n > 0 {
		c.wants[target] = n
	} else {
		delete(c.wants, target)
	}
}

// forget drops target's claim (its loop ended).
func (c *claims) forget(target string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.wants, target)
	delete(c.passed, target)
}

// of lists the claims of cfg's enabled targets, t's own as want. A target that holds slot leases
// but whose loop has not claimed yet in this run (its first pass has not come: attempts a crash
// left behind, a staggered start) claims its max_runners: its jobs may be waiting, and a target
// that passes first must not take the slots it would be given (TestStarvedTargetGetsItsShare). A
// target holding nothing claims nothing until its loop says so, so a thousand targets starting
// do not hold back the first.
func (c *claims) of(cfg *config.Config, room journal.Room, t config.Target, want int) []journal.Claim {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []journal.Claim{{Target: t.Name, Max: t.MaxRunners, Want: want}}
	if cfg == nil {
		return out
	}
	for name, n := range c.wants {
		if ct, ok := cfg.Target(name); ok && name != t.Name && ct.IsEnabled() {
			out = append(out, journal.Claim{Target: name, Max: ct.MaxRunners, Want: n})
		}
	}
	for name := range room.Holders() {
		if ct, ok := cfg.Target(name); ok && name != t.Name && ct.IsEnabled() && !c.passed[name] {
			out = append(out, journal.Claim{Target: name, Max: ct.MaxRunners, Want: ct.MaxRunners})
		}
	}
	return out
}

// wantOf is what target's loop last claimed.
func (c *claims) wantOf(target string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wants[target]
}

// room is the engine's one question to journal.Room: how many more runners t may start now,
// wanting want more, on the slot leases of r. target is its room by its own max_runners (negative
// when over it); host is its hard room bounded by its fair share of the host among the targets
// that want runners (journal.Room.Fair), never more than target. The pass (planInput, claim),
// the fleet's published Free and webhook routing (hasRoom) all ask it.
func (s *Supervisor) room(cfg *config.Config, r journal.Room, t config.Target, want int) (target, host int) {
	r.HostMax = 0
	if cfg != nil {
		r.HostMax = cfg.Daemon.MaxRunners
	}
	return r.Left(t.Name, t.MaxRunners), r.Fair(t.Name, t.MaxRunners, s.claims.of(cfg, r, t, want))
}

// claim tells the supervisor how many runners this pass wants beyond what the target has (none
// while draining or observing; the last claim stands when the demand could not be read), and
// bounds in's host room by the target's fair share on it (journal.Room.Fair). A draining loop
// claims nothing: it may share its name with the target's new loop (an identity change).
func (l *loop) claim(cfg *config.Config, t config.Target, live []journal.Attempt, in *planInput, read bool) {
	if in.Draining {
		return
	}
	switch {
	case in.Monitor:
		l.want = 0
	case read:
		// No more than the target may still start: a schedule's lower max_runners in force
		// must not claim host slots it cannot use (TestScheduleMaxRunnersInForce).
		l.want = min(plan(*in).Wanted, max(in.TargetFree, 0))
	}
	l.sup.claims.set(t.Name, l.want)
	r := journal.RoomOf(0, live)
	l.sup.rooms.Store(&r)
	_, in.HostFree = l.sup.room(cfg, r, t, l.want)
}
