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

// SetGovernorShareSource makes every scrape read this host's share of the request governor's
// ceiling from f, in points a minute: the whole ceiling alone (no fleet, or not joined: degraded
// mode), its fleet share while joined (docs/fleet.md). Read at scrape time like the rate limits,
// so the gauge is the share the governor paces itself at now. f must be fast and safe for
// concurrent use; nil stops exporting it.
func (m *Metrics) SetGovernorShareSource(f func() int) { m.share.set(f) }

// SetGovernorUsedSource makes every scrape read the points the request governor sent over the
// last minute from f (every account summed), the use to compare with the share and the ceiling.
// f must be fast and safe for concurrent use; nil stops exporting it.
func (m *Metrics) SetGovernorUsedSource(f func() int) { m.used.set(f) }

// sourceGauge exports one gauge read from its source at collection time.
type sourceGauge struct {
	desc *prometheus.Desc

	mu  sync.Mutex
	src func() int
}

func newShareCollector() *sourceGauge {
	return newSourceGauge("points_share_per_minute",
		"Secondary-limit points a minute this host's request governor may spend now: the whole ceiling (github.points_per_minute) alone or when not joined, its share of it while joined to a fleet.")
}

func newUsedCollector() *sourceGauge {
	return newSourceGauge("points_used_per_minute",
		"Secondary-limit points this host's request governor sent over the last 60 s, every account summed.")
}

func newSourceGauge(name, help string) *sourceGauge {
	return &sourceGauge{desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "github", name), help, nil, nil)}
}

func (c *sourceGauge) set(f func() int) {
	c.mu.Lock()
	c.src = f
	c.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *sourceGauge) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *sourceGauge) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src := c.src
	c.mu.Unlock()
	if src != nil {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(src()))
	}
}
