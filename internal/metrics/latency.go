package metrics

import (
	"slices"
	"sync"
	"time"
)

// recentJobs is how many of a target's latest jobs QueueLatency summarises: enough for a stable
// p95, few enough that it follows a change within minutes on a busy target.
const recentJobs = 100

// recentLatencies keeps each target's latest queued-to-in-progress waits for status and
// `runner-manager top`, which show them without a Prometheus server to ask the histogram.
type recentLatencies struct {
	mu       sync.Mutex
	byTarget map[string][]time.Duration // oldest first, at most recentJobs
}

func (r *recentLatencies) add(target string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byTarget == nil {
		r.byTarget = map[string][]time.Duration{}
	}
	l := append(r.byTarget[target], d)
	if len(l) > recentJobs {
		l = l[len(l)-recentJobs:]
	}
	r.byTarget[target] = l
}

func (r *recentLatencies) forget(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byTarget, target)
}

// QueueLatency is the median and 95th percentile of the time target's latest jobs (at most 100)
// waited from queued to in progress, and how many jobs that is (0: none seen since the start).
func (m *Metrics) QueueLatency(target string) (p50, p95 time.Duration, jobs int) {
	m.recent.mu.Lock()
	l := slices.Clone(m.recent.byTarget[target])
	m.recent.mu.Unlock()
	if len(l) == 0 {
		return 0, 0, 0
	}
	slices.Sort(l)
	return nearestRank(l, 50), nearestRank(l, 95), len(l)
}

// nearestRank is the p-th percentile of sorted by the nearest-rank method.
func nearestRank(sorted []time.Duration, p int) time.Duration {
	i := (p*len(sorted) + 99) / 100 // ceil(p/100 * n), 1-based
	return sorted[max(i, 1)-1]
}
