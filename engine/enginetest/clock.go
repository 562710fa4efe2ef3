// Package enginetest holds fakes for tests of the engine and of the daemon built on it: a fake clock
// that only moves when told to, and an in-memory journal with the same rules as the pebble one. It
// never touches the disk, the network or real time.
package enginetest

import (
	"context"
	"sort"
	"sync"
	"time"
)

// FakeClock is a Clock whose time moves only on Advance. It satisfies engine.Clock.
type FakeClock struct {
	mu      sync.Mutex
	cond    *sync.Cond
	now     time.Time
	waiters []waiter
	nextID  int
}

type waiter struct {
	id int
	at time.Time
	ch chan time.Time
}

// NewFakeClock returns a clock stopped at start.
func NewFakeClock(start time.Time) *FakeClock {
	c := &FakeClock{now: start}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Timer registers a waiter that fires once the clock reaches now+d; stop removes it, so Waiters
// counts exactly the timers someone still waits on.
func (c *FakeClock) Timer(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch, func() {}
	}
	c.nextID++
	id := c.nextID
	c.waiters = append(c.waiters, waiter{id: id, at: c.now.Add(d), ch: ch})
	c.cond.Broadcast()
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, w := range c.waiters {
			if w.id == id {
				c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
				c.cond.Broadcast()
				return
			}
		}
	}
}

// Advance moves time forward and fires every waiter that is due, earliest first.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	sort.Slice(c.waiters, func(i, j int) bool { return c.waiters[i].at.Before(c.waiters[j].at) })
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}

// Waiters reports how many timers are pending.
func (c *FakeClock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// BlockUntil waits until exactly n timers are pending, so a test advances time only once
// the goroutines it drives are parked on their timers. It gives up when ctx ends.
func (c *FakeClock) BlockUntil(ctx context.Context, n int) error {
	return WaitCond(ctx, c.cond, func() bool { return len(c.waiters) == n })
}
