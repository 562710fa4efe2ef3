package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values every target's series start with (InitTargets), so that increase() and absent()
// alerts see a 0 before the first event. FailureReasons equal engine's Reason* constants,
// RefusalReasons its Refusal* constants and RunnerStates the journal's non-terminal states
// (internal/daemon's tests pin them).
var (
	FailureReasons = []string{"registration_timed_out", "launch_failed", "out_of_memory", "max_job_duration", "ghost",
		"image_missing", "container_runtime_unavailable", "runner_dependency_missing"}
	RefusalReasons = []string{"low_disk"}
	RunnerStates   = []string{"planned", "registered", "started", "busy", "exited", "deregistered", "failed"}
	scaleUpStages  = []string{StageQueuedToStarted, StageStartedToInProgress, StageQueuedToInProgress}
)

// InitTargets makes every per-target series of the named targets exist at 0: the error and
// failure counters, the job counter, the histograms and the runner states. The daemon calls it with
// the enabled targets at start and after every applied reload; series that exist keep their
// values, and ForgetTarget still drops a removed target's. The zeros are made at each scrape
// (zeroed), not stored: 10,000 targets' worth of stored series cost 99 MiB.
func (m *Metrics) InitTargets(names []string) { m.initialised.add(names) }

// TargetGauges is one enabled target's state at a scrape, as the daemon knows it.
type TargetGauges struct {
	Name       string
	MaxRunners int // the target's max_runners
	Demand     int // jobs waiting for the target's runners at its latest pass
}

// SetTargetSource makes every scrape read the enabled targets' gauges from f (the config in force
// and the engine's status), so a removed target's gauges end with the config that removed it. f
// must be fast and safe for concurrent use; nil stops exporting them.
func (m *Metrics) SetTargetSource(f func() []TargetGauges) { m.targets.src.set(f) }

// TargetContact records a successful GitHub answer to a call made for target at t; it fits
// internal/github's Options.TargetContacted.
func (m *Metrics) TargetContact(target string, t time.Time) {
	m.targets.mu.Lock()
	defer m.targets.mu.Unlock()
	if t.After(m.targets.contact[target]) {
		m.targets.contact[target] = t
	}
}

// targetCollector exports the per-target gauges from the source at collection time.
type targetCollector struct {
	demand, maxRunners, contactTS *prometheus.Desc

	src source[[]TargetGauges]

	mu      sync.Mutex
	contact map[string]time.Time
}

func newTargetCollector() *targetCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "target", name), help, []string{"target"}, nil)
	}
	return &targetCollector{
		demand:     desc("demand", "Jobs waiting for the target's runners at its latest pass (0 before the first)."),
		maxRunners: desc("max_runners", "The target's max_runners: the most runners it may have at once."),
		contactTS:  desc("last_github_contact_timestamp_seconds", "When GitHub last answered a call made for the target successfully (Unix time; 0: not yet since the daemon started)."),
		contact:    map[string]time.Time{},
	}
}

func (c *targetCollector) forget(target string) {
	c.mu.Lock()
	delete(c.contact, target)
	c.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *targetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.demand
	ch <- c.maxRunners
	ch <- c.contactTS
}

// Collect implements prometheus.Collector.
func (c *targetCollector) Collect(ch chan<- prometheus.Metric) {
	targets, _ := c.src.read()
	for _, t := range targets {
		c.mu.Lock()
		at := c.contact[t.Name]
		c.mu.Unlock()
		ts := 0.0
		if !at.IsZero() {
			ts = unixSeconds(at)
		}
		ch <- prometheus.MustNewConstMetric(c.demand, prometheus.GaugeValue, float64(t.Demand), t.Name)
		ch <- prometheus.MustNewConstMetric(c.maxRunners, prometheus.GaugeValue, float64(t.MaxRunners), t.Name)
		ch <- prometheus.MustNewConstMetric(c.contactTS, prometheus.GaugeValue, ts, t.Name)
	}
}
