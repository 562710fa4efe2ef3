package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RateLimit is GitHub's last word on one rate-limit resource (the x-ratelimit-* headers).
type RateLimit struct {
	Limit     int
	Remaining int
	Reset     time.Time
}

// SetRateLimitSource makes every scrape read the current rate limits from f, by account then by
// resource, typically each account's GitHub client's Budget().Rates() converted to RateLimit.
// Pulling at scrape time keeps the gauges exactly as fresh as the budget each client itself obeys,
// with no copying loop. f must be fast and safe for concurrent use; nil stops exporting them.
func (m *Metrics) SetRateLimitSource(f func() map[string]map[string]RateLimit) { m.rates.src.set(f) }

// source is what a collector reads at scrape time, set after New; nil exports nothing.
type source[T any] struct {
	mu sync.Mutex
	f  func() T
}

func (s *source[T]) set(f func() T) {
	s.mu.Lock()
	s.f = f
	s.mu.Unlock()
}

// read calls the source outside the lock; ok is false while none is set.
func (s *source[T]) read() (v T, ok bool) {
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	if f == nil {
		return v, false
	}
	return f(), true
}

// rateCollector exports the rate-limit gauges from the source at collection time.
type rateCollector struct {
	limit, remaining, reset *prometheus.Desc
	src                     source[map[string]map[string]RateLimit]
}

func newRateCollector() *rateCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "github", name), help, []string{"account", "resource"}, nil)
	}
	return &rateCollector{
		limit:     desc("rate_limit_requests", "Requests allowed per window for the account's credential and the resource (x-ratelimit-limit)."),
		remaining: desc("rate_limit_remaining", "Requests left in the current GitHub rate-limit window (x-ratelimit-remaining), by account and resource."),
		reset:     desc("rate_limit_reset_timestamp_seconds", "When the current GitHub rate-limit window resets (x-ratelimit-reset), by account and resource."),
	}
}

// Describe implements prometheus.Collector.
func (c *rateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.limit
	ch <- c.remaining
	ch <- c.reset
}

// Collect implements prometheus.Collector.
func (c *rateCollector) Collect(ch chan<- prometheus.Metric) {
	rates, _ := c.src.read()
	for account, byResource := range rates {
		for resource, r := range byResource {
			ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(r.Limit), account, resource)
			ch <- prometheus.MustNewConstMetric(c.remaining, prometheus.GaugeValue, float64(r.Remaining), account, resource)
			ch <- prometheus.MustNewConstMetric(c.reset, prometheus.GaugeValue, unixSeconds(r.Reset), account, resource)
		}
	}
}

// SetGovernorShareSource makes every scrape read this host's share of each account's request
// governor's ceiling from f (account name -> points a minute): the whole ceiling alone (no fleet,
// or not joined: degraded mode), its fleet share while joined (docs/fleet.md). Read at scrape time
// like the rate limits, so the gauge is the share each governor paces itself at now. f must be
// fast and safe for concurrent use; nil stops exporting it.
func (m *Metrics) SetGovernorShareSource(f func() map[string]int) { m.share.src.set(f) }

// SetGovernorUsedSource makes every scrape read the points each account's request governor sent
// over the last minute from f (account name -> points), the use to compare with the share and
// the ceiling. f must be fast and safe for concurrent use; nil stops exporting it.
func (m *Metrics) SetGovernorUsedSource(f func() map[string]int) { m.used.src.set(f) }

// accountGauge exports one gauge per account, read from its source at collection time.
type accountGauge struct {
	desc *prometheus.Desc
	src  source[map[string]int]
}

func newShareCollector() *accountGauge {
	return newAccountGauge("points_share_per_minute",
		"Secondary-limit points a minute this host's request governor of the account may spend now: the whole ceiling (points_per_minute) alone or when not joined, its share of it while joined to a fleet.")
}

func newUsedCollector() *accountGauge {
	return newAccountGauge("points_used_per_minute",
		"Secondary-limit points this host's request governor of the account sent over the last 60 s.")
}

func newAccountGauge(name, help string) *accountGauge {
	return &accountGauge{desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "github", name), help, []string{"account"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *accountGauge) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *accountGauge) Collect(ch chan<- prometheus.Metric) {
	v, _ := c.src.read()
	for account, n := range v {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), account)
	}
}
