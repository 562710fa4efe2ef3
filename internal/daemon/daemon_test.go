package daemon

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/container"
	"github.com/runner-manager/runner-manager/internal/metrics"
	"github.com/runner-manager/runner-manager/internal/status"
	"github.com/runner-manager/runner-manager/internal/version"
	"github.com/runner-manager/runner-manager/journal"
	"github.com/runner-manager/runner-manager/selfupdate"
)

// The engine reports to the daemon's metrics without importing them: same methods, same stage names.
var (
	_ engine.Observer              = (*metrics.Metrics)(nil)
	_ engine.RunnerFailureObserver = (*metrics.Metrics)(nil)
)

func TestEngineStagesAreTheMetricsStages(t *testing.T) {
	for _, p := range [][2]string{
		{engine.StageQueuedToStarted, metrics.StageQueuedToStarted},
		{engine.StageStartedToInProgress, metrics.StageStartedToInProgress},
		{engine.StageQueuedToInProgress, metrics.StageQueuedToInProgress},
	} {
		if p[0] != p[1] {
			t.Errorf("engine stage %q != metrics stage %q: the histogram would get a stage its docs do not list", p[0], p[1])
		}
	}
}

// The series metrics creates at 0 for every target name exactly the engine's failure reasons and
// the journal's non-terminal states.
func TestMetricsLabelValuesAreTheEngines(t *testing.T) {
	reasons := []string{engine.ReasonRegistrationTimedOut, engine.ReasonLaunchFailed, engine.ReasonOutOfMemory, engine.ReasonMaxJobDuration, engine.ReasonGhost,
		engine.ReasonImageMissing, engine.ReasonContainerRuntimeUnavailable, engine.ReasonRunnerDependencyMissing}
	if !slices.Equal(metrics.FailureReasons, reasons) {
		t.Errorf("metrics.FailureReasons = %q, engine's reasons are %q", metrics.FailureReasons, reasons)
	}
	// The container launcher's reasons are the engine's: they reach it through FailureReason.
	if got := []string{container.ReasonImageMissing, container.ReasonRuntimeUnavailable, container.ReasonDependencyMissing}; !slices.Equal(got, reasons[5:]) {
		t.Errorf("container's failure reasons %q, engine's are %q", got, reasons[5:])
	}
	if refusals := []string{engine.RefusalLowDisk}; !slices.Equal(metrics.RefusalReasons, refusals) {
		t.Errorf("metrics.RefusalReasons = %q, engine's refusals are %q", metrics.RefusalReasons, refusals)
	}
	var states []string
	for _, s := range []journal.State{journal.StatePlanned, journal.StateRegistered, journal.StateStarted, journal.StateBusy,
		journal.StateExited, journal.StateDeregistered, journal.StateFailed, journal.StateCleaned} {
		if !s.Terminal() {
			states = append(states, string(s))
		}
	}
	if !slices.Equal(metrics.RunnerStates, states) {
		t.Errorf("metrics.RunnerStates = %q, the journal's live states are %q", metrics.RunnerStates, states)
	}
}

// runJob queues a job on acme/web that runs until finished, waits for a runner of the daemon to
// be busy with it, finishes it and waits until the daemon has concluded that runner. It returns the
// snapshot taken while the runner was busy.
func (e *env) runJob() status.Snapshot { e.t.Helper(); return e.runJobWith("linux") }

// runJobWith is runJob for a job asking for the given labels.
func (e *env) runJobWith(labels ...string) status.Snapshot {
	e.t.Helper()
	id, err := e.srv.QueueJob("acme/web", labels, -1)
	if err != nil {
		e.t.Fatal(err)
	}
	busy := e.waitStatus("a runner busy with the job", func(s status.Snapshot) bool { return target(s).Busy == 1 })
	if err := e.srv.FinishJob(id, "success", false); err != nil {
		e.t.Fatal(err)
	}
	e.waitStatus("the runner concluded", func(s status.Snapshot) bool {
		return target(s).Owned == 0 && len(s.Runners) == 0
	})
	return busy
}

func TestDaemonRunsAJobAndExportsMetrics(t *testing.T) {
	t.Parallel() // each test has its own simulator, daemon, state dir and ports
	e := newEnv(t)
	e.start()
	host := hostID(t, e.runJob())

	// The operator's view after one job: golden, with pids, ages, temp paths and the host id normalised.
	checkGolden(t, "status-after-job.golden", e.normalize(e.statusCLI("--config", e.configPath), host, version.Current()))

	fams := e.scrape()
	web := map[string]string{"target": "web"}
	checks := []struct {
		name   string
		labels map[string]string
		ok     func(float64) bool
		want   string
	}{
		{"runner_manager_jobs_picked_up_total", web, func(v float64) bool { return v >= 1 }, ">= 1"},
		{"runner_manager_runners", map[string]string{"target": "web", "state": "busy"}, func(v float64) bool { return v == 0 }, "0 (it was 1, the runner is gone)"},
		{"runner_manager_runners", map[string]string{"target": "web", "state": "started"}, func(v float64) bool { return v == 0 }, "0"},
		{"runner_manager_github_requests_total", nil, func(v float64) bool { return v > 0 }, "> 0"},
		{"runner_manager_github_rate_limit_remaining", map[string]string{"resource": "core"}, func(v float64) bool { return v > 0 && v < 5000 }, "in (0, 5000)"},
		{"runner_manager_github_points_share_per_minute", nil, func(v float64) bool { return v == 600 }, "600 (the default ceiling, whole: no fleet)"},
		{"runner_manager_github_last_successful_contact_timestamp_seconds", map[string]string{"account": "default"}, func(v float64) bool { return v > 1e9 }, "a Unix time"},
		{"runner_manager_config_last_reload_successful", nil, func(v float64) bool { return v == 1 }, "1"},
		{"runner_manager_config_generation", nil, func(v float64) bool { return v == 1 }, "1"},
		{"runner_manager_config_reloads_total", map[string]string{"result": "success"}, func(v float64) bool { return v == 1 }, "1 (the startup load)"},
		{"runner_manager_reconcile_duration_seconds", web, func(v float64) bool { return v >= 2 }, ">= 2 passes"},
		{"runner_manager_scale_up_latency_seconds", map[string]string{"target": "web", "stage": metrics.StageQueuedToStarted}, func(v float64) bool { return v == 1 }, "1 observation"},
		{"runner_manager_scale_up_latency_seconds", map[string]string{"target": "web", "stage": metrics.StageStartedToInProgress}, func(v float64) bool { return v == 1 }, "1 observation"},
		{"runner_manager_scale_up_latency_seconds", map[string]string{"target": "web", "stage": metrics.StageQueuedToInProgress}, func(v float64) bool { return v == 1 }, "1 observation"},
		{"runner_manager_journal_write_duration_seconds", nil, func(v float64) bool { return v >= 7 }, ">= 7 writes (planned ... cleaned)"},
		{"runner_manager_webhook_deliveries_total", map[string]string{"result": "accepted"}, func(v float64) bool { return v >= 1 }, ">= 1 (ghsim's workflow_job deliveries)"},
		// Series a quiet target has from the start, at 0.
		{"runner_manager_reconcile_errors_total", web, func(v float64) bool { return v == 0 }, "0 (present before any error)"},
		{"runner_manager_runner_failures_total", map[string]string{"target": "web", "reason": metrics.FailureReasons[1]}, func(v float64) bool { return v == 0 }, "0"},
		{"runner_manager_target_max_runners", web, func(v float64) bool { return v == 1 }, "1 (the target's max_runners)"},
		{"runner_manager_target_demand", web, func(v float64) bool { return v == 0 }, "0 (the job is done)"},
		{"runner_manager_target_last_github_contact_timestamp_seconds", web, func(v float64) bool { return v > 1e9 }, "a Unix time"},
		{"runner_manager_github_points_per_minute_ceiling", nil, func(v float64) bool { return v == 600 }, "600 (the default)"},
		{"runner_manager_github_poll_need_points_per_minute", nil, func(v float64) bool { return v > 0 && v < 600 }, "in (0, 600): one target's polls"},
		{"runner_manager_github_poll_stretch", nil, func(v float64) bool { return v == 1 }, "1 (one target fits)"},
	}
	for _, c := range checks {
		v, ok := sample(fams, c.name, c.labels)
		if !ok || !c.ok(v) {
			t.Errorf("%s%v = %v (present %v), want %s", c.name, c.labels, v, ok, c.want)
		}
	}
	if sum := histogramSum(fams, "runner_manager_scale_up_latency_seconds", metrics.StageQueuedToInProgress); sum <= 0 || sum > waitLimit.Seconds() {
		t.Errorf("queued_to_in_progress took %vs; want a positive wait shorter than the test's %s bound", sum, waitLimit)
	}

	// Removing the target: once its loop has drained, every series of web is gone from the scrape.
	e.writeConfig("")
	e.waitStatus("target web removed", func(s status.Snapshot) bool { return len(s.Targets) == 0 })
	fams = e.scrape()
	for _, name := range []string{"runner_manager_runners", "runner_manager_jobs_picked_up_total", "runner_manager_reconcile_duration_seconds",
		"runner_manager_reconcile_errors_total", "runner_manager_target_max_runners", "runner_manager_target_last_github_contact_timestamp_seconds"} {
		if v, ok := sample(fams, name, web); ok {
			t.Errorf("%s{target=web} = %v is still exported after the target was removed", name, v)
		}
	}
	// No target uses [github] any more: it makes no request, so it has no contact series to go stale.
	if v, ok := sample(fams, "runner_manager_github_last_successful_contact_timestamp_seconds", nil); ok {
		t.Errorf("the last contact of an account no target uses is exported: %v", v)
	}
}

func TestInvalidReloadKeepsTheLastGoodConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start()
	e.writeConfig(webTarget(0)) // rejected whole
	snap := e.waitStatus("the rejected reload", func(s status.Snapshot) bool { return !s.Config.LastReload.OK })
	// file:line:col of the offending key (line 26 of configText), as `runner-manager validate` prints it;
	// the runner_user = "daemon" warning of configText is not a reason for the rejection.
	wantErr := regexp.MustCompile(`^` + regexp.QuoteMeta(e.configPath) + `:26:\d+: target "web": max_runners must be at least 1`)
	errs := slices.DeleteFunc(slices.Clone(snap.Config.LastReload.Error), func(p string) bool { return strings.Contains(p, ": warning: ") })
	if len(errs) != 1 || !wantErr.MatchString(errs[0]) {
		t.Fatalf("reload error %q, want one problem matching %s", errs, wantErr)
	}
	fams := e.scrape()
	if v, _ := sample(fams, "runner_manager_config_last_reload_successful", nil); v != 0 {
		t.Errorf("config_last_reload_successful = %v after a rejected file, want 0", v)
	}
	if v, _ := sample(fams, "runner_manager_config_reloads_total", map[string]string{"result": "failure"}); v != 1 {
		t.Errorf("config_reloads_total{result=failure} = %v, want 1", v)
	}

	// The last good config (generation 1, web with max_runners 1) keeps running: a job is still served.
	host := hostID(t, e.runJob())
	// An invalid file hides the state_dir from the CLI, so the operator passes the socket.
	out := e.statusCLI("--socket", status.SocketPath(e.stateDir))
	checkGolden(t, "status-rejected.golden", e.normalize(out, host, version.Current()))

	e.writeConfig(webTarget(2)) // fixed: applied as generation 2, and the metric says so
	e.waitStatus("the fixed file applied", func(s status.Snapshot) bool { return s.Config.LastReload.OK && s.Config.Generation == 2 })
	fams = e.scrape()
	if v, _ := sample(fams, "runner_manager_config_last_reload_successful", nil); v != 1 {
		t.Errorf("config_last_reload_successful = %v after the fix, want 1", v)
	}
	if v, _ := sample(fams, "runner_manager_config_generation", nil); v != 2 {
		t.Errorf("config_generation = %v after the fix, want 2", v)
	}
}

// histogramSum is the sum of the observations of one stage of a histogram family.
func histogramSum(fams map[string]*dto.MetricFamily, name, stage string) float64 {
	var sum float64
	for _, m := range fams[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "stage" && lp.GetValue() == stage {
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return sum
}

// TestReloadClasses: log_level and log_format apply live (records after the reload are JSON at
// the new level), and a restart-class change is rejected naming the key, nothing applied.
func TestReloadClasses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start()
	body := strings.NewReplacer(`log_format = "text"`, `log_format = "json"`, `log_level = "debug"`, `log_level = "warn"`).
		Replace(e.configText(webTarget(1)))
	e.writeRaw(body)
	e.waitStatus("the log settings applied", func(s status.Snapshot) bool { return s.Config.LastReload.OK && s.Config.Generation == 2 })
	logStart := len(e.read(e.logs))

	e.writeRaw(strings.Replace(body, `status_listen = "unix"`, `status_listen = "`+freeAddr(t)+`"`, 1))
	snap := e.waitStatus("the restart-only change rejected", func(s status.Snapshot) bool { return !s.Config.LastReload.OK })
	if errs := snap.Config.LastReload.Error; len(errs) != 1 || !strings.Contains(errs[0], "changing daemon.status_listen needs a daemon restart") {
		t.Fatalf("reload error %q, want one naming daemon.status_listen", errs)
	}
	if snap.Config.Generation != 2 {
		t.Fatalf("generation %d after a rejected reload, want 2", snap.Config.Generation)
	}
	after := strings.TrimSpace(e.read(e.logs)[logStart:])
	if after == "" {
		t.Fatal("nothing logged for the rejected reload")
	}
	for _, line := range strings.Split(after, "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("after log_format = json, a record is not JSON: %q", line)
		}
		if lvl := rec["level"]; lvl == "DEBUG" || lvl == "INFO" {
			t.Fatalf("after log_level = warn, a %s record was written: %q", lvl, line)
		}
	}
}

// TestRejectedConfigCountsAsAFailedStart: with self-update on, a start whose config does not load
// is recorded by the crash-loop guard under the state_dir the file names, so a new version that
// rejects the existing file is rolled back instead of restart-looping.
func TestRejectedConfigCountsAsAFailedStart(t *testing.T) {
	dir := t.TempDir()
	stateDir := dir + "/state"
	cfgPath := dir + "/config.toml"
	if err := os.WriteFile(cfgPath, []byte("[daemon]\nstate_dir = \""+stateDir+"\"\nmax_runners = 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Run(t.Context(), Options{ConfigPath: cfgPath, Stderr: io.Discard,
		Upgrade: UpgradeOptions{Source: dir + "/source", Private: dir + "/private"}})
	if !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("Run = %v, want ErrConfigInvalid", err)
	}
	b, err := os.ReadFile(stateDir + "/" + selfupdate.GuardStateFile)
	if err != nil {
		t.Fatalf("no guard record under the rejected file's state_dir: %v", err)
	}
	var st selfupdate.GuardState
	if err := json.Unmarshal(b, &st); err != nil || !st.Running {
		t.Fatalf("guard record %s: want a start recorded and never ended (%v)", b, err)
	}
}
