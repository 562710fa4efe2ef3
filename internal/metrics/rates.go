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

// SetRateLimitSource makes every scrape read the current rate limits from f, typically the GitHub
// client's Budget().Rates() converted to RateLimit. Pulling at scrape time keeps the gauges exactly
// as fresh as the budget the client itself obeys, with no copying loop. f must be fast and safe
// for concurrent use; nil stops exporting them.
func (m *Metrics) SetRateLimitSource(f func() map[string]RateLimit) { m.rates.set(f) }

// rateCollector exports the rate-limit gauges from the source at collection time.
type rateCollector struct {
	limit, remaining, reset *prometheus.Desc

	mu  sync.Mutex
	src func() map[string]RateLimit
}

func newRateCollector() *rateCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "github", name), help, []string{"resource"}, nil)
	}
	return &rateCollector{
		limit:     desc("rate_limit_requests", "Requests allowed per window for the resource (x-ratelimit-limit)."),
		remaining: desc("rate_limit_remaining", "Requests left in the current GitHub rate-limit window (x-ratelimit-remaining), by resource."),
		reset:     desc("rate_limit_reset_timestamp_seconds", "When the current GitHub rate-limit window resets (x-ratelimit-reset), by resource."),
	}
}

func (c *rateCollector) set(f func() map[string]RateLimit) {
	c.mu.Lock()
	c.src = f
	c.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *rateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.limit
	ch <- c.remaining
	ch <- c.reset
}

// Collect implements prometheus.Collector.
func (c *rateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src := c.src
	c.mu.Unlock()
	if src == nil {
		return
	}
	for resource, r := range src() {
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(r.Limit), resource)
		ch <- prometheus.MustNewConstMetric(c.remaining, prometheus.GaugeValue, float64(r.Remaining), resource)
		ch <- prometheus.MustNewConstMetric(c.reset, prometheus.GaugeValue, unixSeconds(r.Reset), resource)
	}
}

// SetGovernorShareSource makes every scrape read this host's share of each account's request
// governor's ceiling from f (account name -> points a minute): the whole ceiling alone (no fleet,
// or not joined: degraded mode), its fleet share while joined (docs/fleet.md). Read at scrape time
// like the rate limits, so the gauge is the share each governor paces itself at now. f must be
// fast and safe for concurrent use; nil stops exporting it.
func (m *Metrics) SetGovernorShareSource(f func() map[string]int) { m.share.set(f) }

// shareCollector exports the governors' shares from their source at collection time.
type shareCollector struct {
	desc *prometheus.Desc

	mu  sync.Mutex
	src func() map[string]int
}

func newShareCollector() *shareCollector {
	return &shareCollector{desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "github", "points_share_per_minute"),
		"Secondary-limit points a minute this host's request governor of the account may spend now: the whole ceiling (points_per_minute) alone or when not joined, its share of it while joined to a fleet.", []string{"account"}, nil)}
}

func (c *shareCollector) set(f func() map[string]int) {
	c.mu.Lock()
	c.src = f
	c.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *shareCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *shareCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src := c.src
	c.mu.Unlock()
	if src == nil {
		return
	}
	for account, share := range src() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(share), account)
	}
}
