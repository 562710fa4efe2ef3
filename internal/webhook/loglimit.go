package webhook

import (
	"sync"
	"time"
)

// logLimiter lets one log line per key through per interval and counts the ones it held back.
type logLimiter struct {
	mu       sync.Mutex
	interval time.Duration
	last     map[string]time.Time
	held     map[string]int
}

func newLogLimiter(interval time.Duration) *logLimiter {
	return &logLimiter{interval: interval, last: map[string]time.Time{}, held: map[string]int{}}
}

// allow reports whether a line for key may be logged at now, and how many were held back since the last one.
func (l *logLimiter) allow(key string, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.last[key]; ok && now.Sub(last) < l.interval {
		l.held[key]++
		return false, 0
	}
	n := l.held[key]
	l.last[key], l.held[key] = now, 0
	return true, n
}
