// Package metrics owns runner-manager's Prometheus instrumentation: one private registry, the metric
// definitions, the small typed methods the daemon, engine and GitHub adapters call to record what
// happened, and the HTTP endpoint that serves a scrape. It never decides anything from a metric's
// value, never touches the default global registry, and never puts a secret, token or JIT config
// in a label: labels are target names, states, endpoint templates, status codes and resources only.
package metrics

import (
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// Namespace prefixes every metric this package defines.
const Namespace = "runner_manager"

// Scale-up stages of the latency histogram: a job waits for a runner to start, then for that
// runner to pick it up. The first starts at the job's queued time; the second ends when the engine
// sees the runner busy (a pass after the pick-up), so it includes up to one poll of delay.
const (
	StageQueuedToStarted     = "queued_to_started"      // job queued -> runner process started
	StageStartedToInProgress = "started_to_in_progress" // runner started -> job in progress
	StageQueuedToInProgress  = "queued_to_in_progress"  // the whole wait the user sees
)

// Results of a configuration load, the values of runner_manager_config_reloads_total{result}.
const (
	ReloadSuccess = "success"
	ReloadFailure = "failure"
)

// Metrics is every metric the daemon exports, registered in its own registry.
// All methods are safe for concurrent use. The zero value is not usable: call New.
type Metrics struct {
	reg    *prometheus.Registry
	recent recentLatencies // the latest queue latencies, for status and top

	runners          *prometheus.GaugeVec
	jobsPickedUp     *prometheus.CounterVec
	runnerFailures   *prometheus.CounterVec
	launchRefusals   *prometheus.CounterVec
	scaleUpLatency   *prometheus.HistogramVec
	githubRequests   *prometheus.CounterVec
	githubDuration   *prometheus.HistogramVec
	rates            *rateCollector
	share            *accountGauge
	used             *accountGauge
	targets          *targetCollector
	reconcileSeconds *prometheus.HistogramVec
	reconcileErrors  *prometheus.CounterVec
	reloads          *prometheus.CounterVec
	reloadOK         prometheus.Gauge
	watchHealthy     prometheus.Gauge
	reloadSuccessTS  prometheus.Gauge
	configGeneration prometheus.Gauge
	journalWrite     prometheus.Histogram
	contact          *contactCollector
	webhookDelivery  *prometheus.CounterVec
	packageDiscards  *prometheus.CounterVec
	fleetJoined      *prometheus.GaugeVec
	setSession       *prometheus.GaugeVec
	setJobs          *prometheus.GaugeVec
	fleetAlone       *prometheus.GaugeVec
	fleetLeader      *prometheus.GaugeVec
	pollStretch      *prometheus.GaugeVec
	pollNeed         *prometheus.GaugeVec
	pointsCeiling    *prometheus.GaugeVec

	mu           sync.Mutex
	runnerStates map[string]map[string]bool // target -> states it has reported, so a drop to zero is exported
	initialised  *targetSet                 // the targets whose per-target series exist at 0 (InitTargets)
	planned      map[string]bool            // the accounts whose poll-plan series exist (PollPlans)
}

// latencyBuckets span a fast webhook-driven start (seconds) to a slow poll-driven one (minutes).
var latencyBuckets = []float64{1, 2.5, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600}

// reconcileBuckets span a pass of conditional GETs to one that launches several runners.
var reconcileBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// journalBuckets span a synced write on a fast SSD to one on a busy disk.
var journalBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}

// The constructors of this package's metrics: every name is put under Namespace. Registering is
// left to New, since the per-target ones are registered behind newZeroed.

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help})
}

func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, labels)
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
}

func histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets})
}

func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
}

// New builds the metrics and registers them, with the Go runtime, process and build-info
// collectors, in a registry owned by the returned value. version is the daemon's build version.
func New(version string) *Metrics {
	m := &Metrics{
		reg:          prometheus.NewRegistry(),
		runnerStates: map[string]map[string]bool{},
		initialised:  &targetSet{names: map[string]struct{}{}},
		planned:      map[string]bool{},
	}
	m.runners = gaugeVec("runners",
		"Runners this host owns, by target and journal state.", "target", "state")
	m.jobsPickedUp = counterVec("jobs_picked_up_total",
		"Workflow jobs that a runner started by this host picked up, by target.", "target")
	m.runnerFailures = counterVec("runner_failures_total",
		"Runners this host gave up on, by target and reason (registration_timed_out: never came online within startup_timeout; launch_failed; out_of_memory: its job went past memory_max; max_job_duration: busy too long, stopped; ghost: alive after GitHub forgot it, stopped; image_missing, container_runtime_unavailable, runner_dependency_missing: a container runner's image, Docker Engine or runner dependencies).", "target", "reason")
	m.launchRefusals = counterVec("launches_refused_total",
		"Passes of a target that wanted runners and launched none for a host condition, by target and reason (low_disk: less than min_free_disk free).", "target", "reason")
	m.scaleUpLatency = histogramVec("scale_up_latency_seconds",
		"Time from a job being queued to a runner starting for it and to the job being in progress, by target and stage.", latencyBuckets, "target", "stage")
	m.githubRequests = counterVec("github_requests_total",
		"GitHub API requests by account, endpoint template and HTTP status (\"error\" when no response arrived).", "account", "endpoint", "status")
	m.githubDuration = histogramVec("github_request_duration_seconds",
		"GitHub API request latency by account and endpoint template.", prometheus.DefBuckets, "account", "endpoint")
	m.rates = newRateCollector()
	m.share = newShareCollector()
	m.used = newUsedCollector()
	m.targets = newTargetCollector()
	m.reconcileSeconds = histogramVec("reconcile_duration_seconds",
		"Duration of one reconcile pass (demand, plan, launch/reap), by target.", reconcileBuckets, "target")
	m.reconcileErrors = counterVec("reconcile_errors_total",
		"Reconcile passes that ended in an error, by target.", "target")
	m.reloads = counterVec("config_reloads_total",
		"Configuration loads (startup and reloads) by result.", "result")
	m.reloadOK = gauge("config_last_reload_successful",
		"Whether the last configuration load succeeded (1) or was rejected (0).")
	m.watchHealthy = gauge("config_watch_healthy",
		"Whether every file watch the config file needs is in place (1) or one is lost (0; a 10 s stat check still sees edits).")
	m.watchHealthy.Set(1)
	m.reloadSuccessTS = gauge("config_last_reload_success_timestamp_seconds",
		"When the configuration was last loaded successfully.")
	m.configGeneration = gauge("config_generation",
		"Generation number of the configuration the daemon is running.")
	m.journalWrite = histogram("journal_write_duration_seconds",
		"Latency of one synced journal write.", journalBuckets)
	m.contact = newContactCollector()
	m.webhookDelivery = counterVec("webhook_deliveries_total",
		"Webhook deliveries received, by result (accepted, duplicate, ignored, or the reason for rejection).", "result")
	m.packageDiscards = counterVec("runner_package_discards_total",
		"Cached runner packages discarded because they failed re-verification against their record, by reason (modified: a file changed; unrecorded: no record).", "reason")
	m.reg.MustRegister(m.packageDiscards)

	m.fleetJoined = gaugeVec("fleet_joined",
		"1 while the host is a member of its [fleet], 0 while etcd is lost and it serves every target alone.", "fleet")
	m.fleetAlone = gaugeVec("fleet_target_alone",
		"1 while this host serves the target alone because its config differs from the fleet's.", "target")
	m.fleetLeader = gaugeVec("fleet_leader",
		"1 while this host is the target's fleet leader (it reads GitHub for the target), 0 while another host is.", "target")
	m.reg.MustRegister(m.fleetJoined, m.fleetAlone, m.fleetLeader)

	m.setSession = gaugeVec("scaleset_session_open",
		"Scale-set targets only: 1 while the target's message session is open, 0 while it is being opened or waits for another session (409).", "target")
	m.setJobs = gaugeVec("scaleset_jobs",
		"Scale-set targets only: the jobs of the scale set as its last message counted them, by state (assigned: waiting or running; running; available: held back).", "target", "state")
	m.reg.MustRegister(m.setSession, m.setJobs)

	m.pollStretch = gaugeVec("github_poll_stretch",
		"The factor every poll interval of the account's targets is multiplied by so their polls fit the account's request governor's ceiling (1: the configured intervals fit).", "account")
	m.pollNeed = gaugeVec("github_poll_need_points_per_minute",
		"Secondary-limit points a minute the account's targets' polls need at their configured intervals.", "account")
	m.pointsCeiling = gaugeVec("github_points_per_minute_ceiling",
		"The account's request governor's ceiling of secondary-limit points a minute (points_per_minute of [github] or its [[account]]).", "account")
	// The [github] account's series exist from the start, as they did before accounts had labels.
	m.PollPlans(map[string]PollPlan{DefaultAccount: {Stretch: 1}})
	m.reg.MustRegister(m.pollStretch, m.pollNeed, m.pointsCeiling)

	target := []string{"target"}
	m.reg.MustRegister(
		newZeroed(m.runners, dto.MetricType_GAUGE, nil, []string{"target", "state"}, RunnerStates, m.initialised),
		newZeroed(m.jobsPickedUp, dto.MetricType_COUNTER, nil, target, nil, m.initialised),
		newZeroed(m.runnerFailures, dto.MetricType_COUNTER, nil, []string{"target", "reason"}, FailureReasons, m.initialised),
		newZeroed(m.launchRefusals, dto.MetricType_COUNTER, nil, []string{"target", "reason"}, RefusalReasons, m.initialised),
		newZeroed(m.scaleUpLatency, dto.MetricType_HISTOGRAM, latencyBuckets, []string{"target", "stage"}, scaleUpStages, m.initialised),
		newZeroed(m.reconcileSeconds, dto.MetricType_HISTOGRAM, reconcileBuckets, target, nil, m.initialised),
		newZeroed(m.reconcileErrors, dto.MetricType_COUNTER, nil, target, nil, m.initialised),
		m.githubRequests, m.githubDuration, m.rates, m.share, m.used, m.targets, m.reloads, m.reloadOK, m.watchHealthy,
		m.reloadSuccessTS, m.configGeneration, m.journalWrite, m.contact, m.webhookDelivery,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "build_info",
			Help:        "Build information; the value is always 1.",
			ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
		}, func() float64 { return 1 }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	// Both results exist from the start so rate() and absent() alerts work before the first failure.
	m.reloads.WithLabelValues(ReloadSuccess)
	m.reloads.WithLabelValues(ReloadFailure)
	return m
}

// Registry is the registry the metrics live in, for tests and for the daemon to add collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SetRunners records how many runners target has in each state. A state reported before and
// missing now is set to 0 rather than dropped, so a graph falls to zero instead of ending.
func (m *Metrics) SetRunners(target string, counts map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := m.runnerStates[target]
	if seen == nil {
		seen = map[string]bool{}
		m.runnerStates[target] = seen
	}
	for state := range seen {
		if _, ok := counts[state]; !ok {
			m.runners.WithLabelValues(target, state).Set(0)
		}
	}
	for state, n := range counts {
		seen[state] = true
		m.runners.WithLabelValues(target, state).Set(float64(n))
	}
}

// ForgetTarget deletes every per-target series of a target removed from the config, so a
// removed target does not linger in dashboards.
func (m *Metrics) ForgetTarget(target string) {
	m.mu.Lock()
	delete(m.runnerStates, target)
	m.mu.Unlock()
	m.recent.forget(target)
	m.initialised.remove(target)
	l := prometheus.Labels{"target": target}
	m.runners.DeletePartialMatch(l)
	m.jobsPickedUp.DeletePartialMatch(l)
	m.runnerFailures.DeletePartialMatch(l)
	m.launchRefusals.DeletePartialMatch(l)
	m.scaleUpLatency.DeletePartialMatch(l)
	m.reconcileSeconds.DeletePartialMatch(l)
	m.reconcileErrors.DeletePartialMatch(l)
	m.setSession.DeletePartialMatch(l)
	m.setJobs.DeletePartialMatch(l)
	m.fleetLeader.DeletePartialMatch(l)
	m.targets.forget(target)
}

// ScaleSet records a scale-set target's session state and the queue's job counts.
func (m *Metrics) ScaleSet(target string, open bool, assigned, running, available int) {
	m.setSession.WithLabelValues(target).Set(boolValue(open))
	m.setJobs.WithLabelValues(target, "assigned").Set(float64(assigned))
	m.setJobs.WithLabelValues(target, "running").Set(float64(running))
	m.setJobs.WithLabelValues(target, "available").Set(float64(available))
}

// LaunchRefused counts one pass of target that launched nothing for reason (engine.Refusal* values).
func (m *Metrics) LaunchRefused(target, reason string) {
	m.launchRefusals.WithLabelValues(target, reason).Inc()
}

// RunnerFailed counts one runner of target given up on for reason (engine.Reason* values).
func (m *Metrics) RunnerFailed(target, reason string) {
	m.runnerFailures.WithLabelValues(target, reason).Inc()
}

// JobPickedUp counts one job that a runner of target picked up.
func (m *Metrics) JobPickedUp(target string) { m.jobsPickedUp.WithLabelValues(target).Inc() }

// ObserveScaleUp records one stage of a job's wait for a runner (Stage* constants).
// A negative duration (clock skew between GitHub and this host) is recorded as 0.
func (m *Metrics) ObserveScaleUp(target, stage string, d time.Duration) {
	m.scaleUpLatency.WithLabelValues(target, stage).Observe(max(d, 0).Seconds())
	if stage == StageQueuedToInProgress {
		m.recent.add(target, max(d, 0))
	}
}

// ObserveGitHubRequest records one GitHub API request. endpoint must be a template such as
// "GET /repos/{owner}/{repo}/actions/runs" (never a URL with a token or a per-job id in it);
// status is the HTTP status, or 0 when the request failed before a response arrived. It has the
// shape of internal/github's Options.Observer once the RequestInfo fields are unpacked.
func (m *Metrics) ObserveGitHubRequest(account, endpoint string, status int, d time.Duration) {
	code := "error"
	if status > 0 {
		code = strconv.Itoa(status)
	}
	m.githubRequests.WithLabelValues(account, endpoint, code).Inc()
	m.githubDuration.WithLabelValues(account, endpoint).Observe(d.Seconds())
}

// ObserveReconcile records one reconcile pass of target; a non-nil err also counts an error.
func (m *Metrics) ObserveReconcile(target string, d time.Duration, err error) {
	m.reconcileSeconds.WithLabelValues(target).Observe(d.Seconds())
	if err != nil {
		m.reconcileErrors.WithLabelValues(target).Inc()
	}
}

// ConfigReload records the outcome of one configuration load at time at. A success also sets the
// generation now running and the last-success timestamp; a failure leaves both as they were,
// because the last good config keeps running.
func (m *Metrics) ConfigReload(ok bool, generation int64, at time.Time) {
	if !ok {
		m.reloads.WithLabelValues(ReloadFailure).Inc()
		m.reloadOK.Set(0)
		return
	}
	m.reloads.WithLabelValues(ReloadSuccess).Inc()
	m.reloadOK.Set(1)
	m.reloadSuccessTS.Set(unixSeconds(at))
	m.configGeneration.Set(float64(generation))
}

// DefaultAccount is the account label of the [github] section's series (config.DefaultAccount).
const DefaultAccount = "default"

// PollPlan is one account's poll plan as exported: its governor's ceiling, what its targets need
// at their configured intervals, and the stretch applied to each of their intervals.
type PollPlan struct {
	Ceiling, Need int
	Stretch       float64
}

// PollPlans records every account's poll plan (status's github_polling), by account name; an
// account planned before and missing now (removed by a reload) loses its series.
func (m *Metrics) PollPlans(plans map[string]PollPlan) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for account := range m.planned {
		if _, ok := plans[account]; !ok {
			l := prometheus.Labels{"account": account}
			m.pointsCeiling.DeletePartialMatch(l)
			m.pollNeed.DeletePartialMatch(l)
			m.pollStretch.DeletePartialMatch(l)
			delete(m.planned, account)
		}
	}
	for account, p := range plans {
		m.planned[account] = true
		m.pointsCeiling.WithLabelValues(account).Set(float64(p.Ceiling))
		m.pollNeed.WithLabelValues(account).Set(float64(p.Need))
		m.pollStretch.WithLabelValues(account).Set(p.Stretch)
	}
}

// FleetJoined records whether the host is a member of fleet (exported only with a [fleet]).
func (m *Metrics) FleetJoined(fleet string, joined bool) {
	m.fleetJoined.WithLabelValues(fleet).Set(boolValue(joined))
}

// FleetTargetAlone records whether target is served alone because its config differs from the fleet's.
func (m *Metrics) FleetTargetAlone(target string, alone bool) {
	m.fleetAlone.WithLabelValues(target).Set(boolValue(alone))
}

// FleetLeader records whether this host leads target in its fleet.
func (m *Metrics) FleetLeader(target string, leads bool) {
	m.fleetLeader.WithLabelValues(target).Set(boolValue(leads))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ConfigWatch records whether the config file's watch is whole.
func (m *Metrics) ConfigWatch(healthy bool) { m.watchHealthy.Set(boolValue(healthy)) }

// ObserveJournalWrite records the latency of one synced journal write.
func (m *Metrics) ObserveJournalWrite(d time.Duration) { m.journalWrite.Observe(d.Seconds()) }

// WebhookDelivery counts one webhook delivery by its result; it has the signature of
// webhook.Options.OnResult so the daemon can pass it directly.
func (m *Metrics) WebhookDelivery(result string) { m.webhookDelivery.WithLabelValues(result).Inc() }

// InitRunnerPackageDiscards creates the discard counter's series at 0, one per reason, so an
// alert on an increase sees the first discard.
func (m *Metrics) InitRunnerPackageDiscards(reasons []string) {
	for _, r := range reasons {
		m.packageDiscards.WithLabelValues(r)
	}
}

// RunnerPackageDiscarded counts one cached runner package discarded by verification; it has the
// reason half of runner.CacheOptions.OnDiscard's signature.
func (m *Metrics) RunnerPackageDiscarded(reason string) {
	m.packageDiscards.WithLabelValues(reason).Inc()
}

// unixSeconds keeps sub-second precision, as Prometheus' own *_timestamp_seconds metrics do.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
