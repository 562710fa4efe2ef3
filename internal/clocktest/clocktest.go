// Package clocktest owns the plain fake clock: a time that moves only when a test says so, for
// code that reads the time through an injected Now and sets no timers of its own (the journal,
// the webhook handler, the simulator). The engine's clock, which also fires timers, is
// engine/enginetest's.
package clocktest

import (
	"sync"
	"time"
)

// Clock only moves when told to. Safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock stopped at t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
