package engine

import (
	"time"

	retry "github.com/sethvargo/go-retry"
)

// backoffState is one loop's own backoff; no other loop ever waits on it.
type backoffState struct {
	class    ErrorClass // "" while healthy
	until    time.Time
	reason   string
	sequence retry.Backoff // nil while healthy
}

// Backoff bases and caps per error class (see classify).
var backoffPolicy = map[ErrorClass]struct{ base, cap time.Duration }{
	ClassUnauthorized: {30 * time.Second, 10 * time.Minute},
	ClassTerminal:     {time.Minute, 15 * time.Minute},
	ClassRetryable:    {5 * time.Second, 5 * time.Minute},
}

// next records a failed pass and returns how long to wait before the next one.
func (b *backoffState) next(err error, now time.Time, poll time.Duration, r Rand) time.Duration {
	class, at := Classify(err)
	if class != b.class || b.sequence == nil {
		b.class = class
		if p, ok := backoffPolicy[class]; ok {
			b.sequence = retry.WithCappedDuration(p.cap, retry.NewExponential(p.base))
		} else {
			b.sequence = retry.NewConstant(poll)
		}
	}
	b.reason = err.Error()
	var wait time.Duration
	if class == ClassRateLimited {
		// Honour the reset time exactly (plus jitter upward so targets sharing a limit do not stampede).
		wait = at.Sub(now)
		if wait <= 0 {
			wait = poll
		}
		wait += time.Duration(r.Int64N(int64(time.Second)))
	} else {
		d, _ := b.sequence.Next()
		wait = jitter(r, d)
	}
	b.until = now.Add(wait)
	return wait
}

// reset records a healthy pass.
func (b *backoffState) reset() { *b = backoffState{} }
