package ghsim

import (
	"time"

	"github.com/runner-manager/runner-manager/internal/clocktest"
)

// Clock is the simulator's notion of now: token expiry, rate-limit windows, device codes and job
// timestamps all read it, so a test can cross an 8 h token lifetime without sleeping.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// FakeClock is a Clock that only moves when told to (Advance, Set). Safe for concurrent use.
type FakeClock = clocktest.Clock

// NewFakeClock returns a clock stopped at t.
func NewFakeClock(t time.Time) *FakeClock { return clocktest.New(t) }
