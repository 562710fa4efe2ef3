package engine

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Clock is the engine's only source of time, so tests drive poll timers, backoffs and drains
// with a fake (enginetest.FakeClock) instead of sleeping.
type Clock interface {
	Now() time.Time
	// Timer delivers the time once d has elapsed; stop releases it early (a no-op once fired).
	// Plain types only, so fakes need not import engine.
	Timer(d time.Duration) (c <-chan time.Time, stop func())
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Timer wraps time.NewTimer.
func (RealClock) Timer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// Rand is the randomness used for poll-timer and backoff jitter; injected so tests are deterministic.
type Rand interface {
	Int64N(n int64) int64
}

// newRand seeds a private generator; the engine never uses the global one.
func newRand() Rand { return rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x9e3779b97f4a7c15)) }

// lockedRand serialises a Rand: every target loop draws its jitter from the supervisor's one
// generator, and math/rand's generators are not safe for concurrent use.
type lockedRand struct {
	mu sync.Mutex
	r  Rand
}

func (l *lockedRand) Int64N(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int64N(n)
}

// jitter spreads d by up to ±10% so loops with the same interval do not poll GitHub in lockstep.
func jitter(r Rand, d time.Duration) time.Duration {
	spread := int64(d) / 5
	if spread <= 0 {
		return d
	}
	return d - time.Duration(spread/2) + time.Duration(r.Int64N(spread+1))
}
