package engine

import "time"

// byChange bounds wait, the time to the next full pass, by the target's next schedule change
// (planInput.Change), so a window that opens or closes is acted on at its minute, not up to a
// poll interval later (TestScheduleWindowOpensAtItsMinute). Not while backing off: a pass then
// could only spend what GitHub refused.
func (l *loop) byChange(wait time.Duration, change time.Time) time.Duration {
	if change.IsZero() || l.backoff.class != "" {
		return wait
	}
	return max(min(wait, change.Sub(l.sup.clock.Now())), 0)
}
