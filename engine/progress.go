package engine

import (
	"sort"
	"sync/atomic"
	"time"
)

// stepClock records when a loop began its current step (a pass, or one attempt's reconcile
// inside a pass: recovery and drains step once per runner), or zero while the loop waits for its
// next pass. A loop that waits is healthy however long it waits; one whose step is old is wedged.
// The daemon's watchdog asks Stalled before it tells systemd the daemon makes progress.
type stepClock struct{ at atomic.Int64 } // unix nanos; 0 while parked

func (c *stepClock) begin(now time.Time) { c.at.Store(now.UnixNano()) }
func (c *stepClock) park()               { c.at.Store(0) }

func (c *stepClock) since(now time.Time) time.Duration {
	at := c.at.Load()
	if at == 0 {
		return 0
	}
	return now.Sub(time.Unix(0, at))
}

// Stalled names the loops (target names) whose current step began more than bound ago on the
// engine's clock: a deadlock, or a call that ignores its context. Every GitHub call of a step is
// bounded by Options.CallTimeout, so a bound of a few call timeouts is never reached by a slow
// GitHub alone. It takes the supervisor's lock, so a supervisor wedged under it does not answer
// at all, which the watchdog treats as a stall too.
func (s *Supervisor) Stalled(bound time.Duration) []string {
	now := s.clock.Now()
	s.mu.Lock()
	var names []string
	for k, l := range s.loops {
		if l.step.since(now) > bound {
			names = append(names, k.name)
		}
	}
	s.mu.Unlock()
	sort.Strings(names)
	return names
}
