// Package daemon wires the real implementations together for `runner-manager daemon`: config
// loading and watching, the host lock, the journal, the GitHub client, the runner launcher, the
// engine's supervisor, the status socket, metrics, webhooks and self-update. It owns the order in
// which they start and stop and the mapping of their failures to the CLI's exit classes. It decides
// nothing about runners itself: that is the engine's job.
package daemon

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/diag"
	"github.com/runner-manager/runner-manager/internal/fleet"
	"github.com/runner-manager/runner-manager/internal/github"
	"github.com/runner-manager/runner-manager/internal/hostlock"
	"github.com/runner-manager/runner-manager/internal/logging"
	"github.com/runner-manager/runner-manager/internal/metrics"
	"github.com/runner-manager/runner-manager/internal/redact"
	"github.com/runner-manager/runner-manager/internal/runner"
	"github.com/runner-manager/runner-manager/internal/scalesetdemand"
	"github.com/runner-manager/runner-manager/internal/status"
	"github.com/runner-manager/runner-manager/internal/version"
	"github.com/runner-manager/runner-manager/journal"
	"github.com/runner-manager/runner-manager/selfupdate"
)

// Failure classes; the CLI maps each to its documented exit code.
var (
	ErrConfigUnreadable = errors.New("config file cannot be read")
	ErrConfigInvalid    = errors.New("config file is invalid")
	ErrConflict         = errors.New("another runner-manager daemon is running")
	ErrNotAuthenticated = errors.New("no usable GitHub credential")
	ErrLocalState       = errors.New("local state cannot be used")
)

// classedError carries a failure class for errors.Is without repeating the class's words in a
// message that already says what happened.
type classedError struct{ class, err error }

func (e *classedError) Error() string   { return e.err.Error() }
func (e *classedError) Unwrap() []error { return []error{e.class, e.err} }
func classed(class, err error) error    { return &classedError{class: class, err: err} }

// Options configure one daemon run. Zero values are production defaults.
type Options struct {
	ConfigPath string
	// Stderr receives every line, through the logger: the ready line (readiness.DaemonLine), the
	// exit summary and the logs; default os.Stderr. Under systemd (JOURNAL_STREAM names it) each line
	// carries its syslog priority.
	Stderr io.Writer
	IsTTY  bool // Stderr is a terminal (picks the log format when log_format = auto)
	// Reload receives one value per forced reload (SIGHUP).
	Reload <-chan struct{}
	// ShimExecutable starts runner shims; default os.Executable() (this binary's `shim` command).
	ShimExecutable string
	// Crash is the fault-injection hook the crash tests use; nil in production.
	Crash engine.CrashHook
	// CallTimeout is the engine's bound on one pass's GitHub calls; 0 (production) is its default.
	CallTimeout time.Duration
	// Upgrade enables self-update when Source is set.
	Upgrade UpgradeOptions
	// After and Now are the clock of the missing-file grace (MissingFileGrace); nil is the wall
	// clock's (time.After, time.Now). Tests pass a fake to end the grace without waiting.
	After func(time.Duration) <-chan time.Time
	Now   func() time.Time
	// Beat is the clock of the watchdog's checks (watchdogLoop); nil is time.After. Apart from
	// After, so a test of one never moves the other's timers.
	Beat func(time.Duration) <-chan time.Time
	// Redactor scrubs everything the daemon prints or serves (logs, start-up errors, status); the
	// daemon teaches it the secrets of every config it loads, a rejected one's included. The CLI
	// passes the one its own output goes through; nil makes one.
	Redactor *redact.Redactor
}

// Run runs the daemon until ctx ends (SIGTERM/SIGINT: a bounded shutdown drain) or an upgrade is
// installed (selfupdate.ErrUpgradePending). Runners still alive at exit are left for recovery.
func Run(ctx context.Context, o Options) error {
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Redactor == nil {
		o.Redactor = redact.New()
	}
	stderrFile, _ := redact.Unwrap(o.Stderr).(*os.File)
	o.Stderr = o.Redactor.Writer(o.Stderr)
	// The watch is armed before the first load, so an edit made while the daemon starts is seen.
	var running atomic.Pointer[daemon]
	watcher, watchErr := config.NewWatcher(o.ConfigPath, config.WatchOptions{
		Settle: func() time.Duration {
			if d := running.Load(); d != nil {
				return d.config().Daemon.ReloadSettle.D()
			}
			return time.Second
		},
		OnHealth: func(err error) {
			if d := running.Load(); d != nil {
				d.watchHealth(err)
			}
		},
	})
	if watchErr == nil {
		defer watcher.Close() // for the returns before the watch runs; closing twice is harmless
	} else {
		watcher = nil
	}
	cfg, err := config.Load(o.ConfigPath)
	learnSecrets(o.Redactor, cfg, err)
	if err != nil {
		if failedStart(ctx, o, err) {
			return selfupdate.ErrUpgradePending
		}
		var cerr *config.Error
		if errors.As(err, &cerr) {
			for _, p := range cerr.Problems {
				fmt.Fprintln(o.Stderr, p.String())
			}
			return classed(ErrConfigInvalid, fmt.Errorf("%s is invalid: fix it and start again (check with: runner-manager validate --config %s)", o.ConfigPath, o.ConfigPath))
		}
		return classed(ErrConfigUnreadable, err)
	}
	logs := logging.NewLiveWith(o.Stderr, logging.Options{Level: cfg.Daemon.LogLevel, Format: cfg.Daemon.LogFormat,
		IsTTY: o.IsTTY, Journal: logging.UnderJournal(stderrFile), Redactor: o.Redactor})
	log := logs.Logger()
	for _, w := range cfg.Warnings {
		log.Warn("config warning", "problem", w.String())
	}

	lock, err := lockStateDir(ctx, cfg.Daemon.StateDir)
	if err != nil {
		return err
	}
	guard, err := newGuard(o, cfg.Daemon.StateDir, log)
	if err != nil {
		_ = lock.Release()
		return classed(ErrLocalState, err)
	}
	if guard != nil {
		// Before anything else can fail: a binary that dies early must count as a crash. After the
		// lock, so a second daemon refused at the door does not count as a start.
		rolledBack, err := guard.OnStart(ctx)
		if err != nil {
			log.Error("self-update: cannot record this start; the crash-loop guard is blind", "err", err)
		}
		if rolledBack {
			_ = lock.Release()
			return selfupdate.ErrUpgradePending
		}
	}
	d, err := start(ctx, o, cfg, log, lock)
	if err != nil {
		return err
	}
	d.guard, d.logs, d.watcher = guard, logs, watcher
	running.Store(d)
	if watchErr != nil {
		d.watchHealth(watchErr)
	}
	return d.run(ctx)
}

// daemon is one running instance; fields are set once by start.
type daemon struct {
	o       Options
	log     *slog.Logger
	logs    *logging.Live // log_level and log_format are live keys
	lock    *hostlock.Lock
	journal *journal.Journal
	metrics *metrics.Metrics
	gh      *gitHub
	pacer   *pacer
	sets    *scalesetdemand.Source
	sup     *engine.Supervisor
	fleet   *fleet.Fleet      // nil without a [fleet]
	guard   *selfupdate.Guard // nil when self-update is off
	started time.Time
	cgroups cgroupState // the runners' cgroups, or why there are none

	watcher *config.Watcher    // nil when no watch could be made (SIGHUP still reloads)
	probe   chan chan struct{} // the watchdog's question to the reload loop, answered by closing
	// reloadReq carries `runner-manager reload`'s requests to the reload loop, each with the
	// (buffered) channel its outcome is sent on.
	reloadReq chan chan<- status.ReloadResult

	mu       sync.Mutex
	cfg      *config.Config // the last good config
	watchErr error          // why the config watch is not whole; nil when it is
}

// lockStateDir creates the state directory and takes the single-instance lock in it.
func lockStateDir(ctx context.Context, stateDir string) (*hostlock.Lock, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, classed(ErrLocalState, fmt.Errorf("create state_dir %s: %w", stateDir, err))
	}
	// MkdirAll keeps the mode of a directory that existed: the journal, credentials and token
	// must be out of every other user's (and every runner's) reach whatever an older install left.
	if err := os.Chmod(stateDir, 0o700); err != nil {
		return nil, classed(ErrLocalState, fmt.Errorf("make state_dir %s private (chmod 0700): %w", stateDir, err))
	}
	lock, err := hostlock.Acquire(ctx, filepath.Join(stateDir, hostlock.FileName), hostlock.Options{})
	if err != nil {
		if errors.Is(err, hostlock.ErrHeld) {
			return nil, classed(ErrConflict, err)
		}
		return nil, classed(ErrLocalState, err)
	}
	return lock, nil
}

// start opens everything behind the lock and applies cfg; on failure it releases the lock.
func start(ctx context.Context, o Options, cfg *config.Config, log *slog.Logger, lock *hostlock.Lock) (_ *daemon, err error) {
	stateDir := cfg.Daemon.StateDir
	defer func() {
		if err != nil {
			_ = lock.Release()
		}
	}()
	m := metrics.New(version.Current())
	j, err := journal.Open(filepath.Join(stateDir, "journal"), journal.Options{Logger: log, OnWrite: m.ObserveJournalWrite})
	if err != nil {
		if errors.Is(err, journal.ErrLocked) {
			return nil, classed(ErrConflict, err)
		}
		return nil, classed(ErrLocalState, fmt.Errorf("open the journal: %w", err))
	}
	defer func() {
		if err != nil {
			_ = j.Close()
		}
	}()
	policyKey, err := policyKey(ctx, j)
	if err != nil {
		return nil, classed(ErrLocalState, err)
	}
	if c, err := j.GitHubContacts(ctx); err == nil {
		m.RestoreGitHubContact(c.Of)
	}

	gh := newGitHub(cfg, func(account string, gc config.GitHub) (*github.Client, error) {
		c, err := github.NewFromConfig(gc, config.AccountStateDir(stateDir, account), github.Options{
			Logger: log,
			Observer: func(ri github.RequestInfo) {
				m.ObserveGitHubRequest(account, ri.Endpoint, ri.Status, ri.Duration)
			},
			// The journal's copy is written by the engine once per successful pass, not per response.
			Contacted:       func(at time.Time) { m.GitHubContact(account, at) },
			TargetContacted: m.TargetContact,
			Ledger:          governorLedger{j: j, log: log},
		})
		if err == nil {
			seedRepoCounts(j, c, log)
		}
		return c, err
	})
	m.SetRateLimitSource(gh.rateLimits)
	m.SetGovernorShareSource(gh.sharePerMinute)
	m.SetGovernorUsedSource(gh.usedByAccount)
	pc := &pacer{gh: gh, onPlan: func(plans map[string]github.PollPlan, changed []string) {
		gauges := make(map[string]metrics.PollPlan, len(plans))
		for name, p := range plans {
			gauges[name] = metrics.PollPlan{Ceiling: p.Ceiling, Need: p.Need, Stretch: p.Stretch}
		}
		m.PollPlans(gauges)
		for _, name := range changed {
			p := plans[name]
			if name == config.DefaultAccount {
				recordPollPlan(j, gh, p, log)
			}
			if p.Message != "" {
				log.Warn("GitHub request governor: poll intervals stretched", "account", name, "detail", p.Message)
			}
		}
	}}
	gh.idleEvery = pc.idleEvery
	// A host with targets must be able to authenticate now; one without needs no credential.
	if len(cfg.EnabledTargets()) > 0 {
		if err := gh.checkAccounts(cfg); err != nil {
			return nil, classed(ErrNotAuthenticated, err)
		}
	}

	runtimeRoot := runner.RuntimeRootFor(stateDir)
	users, err := runnerUsers(cfg.Daemon, os.Geteuid(), log)
	if err != nil {
		return nil, classed(ErrConfigInvalid, err)
	}
	if err := makeRuntimeRoot(runtimeRoot); err != nil {
		return nil, classed(ErrLocalState, err)
	}
	if users != nil {
		if err := checkTraversable(runtimeRoot); err != nil {
			return nil, classed(ErrLocalState, err)
		}
	}
	// No progress bar: on the daemon's terminal it would break into log lines; progress is logged.
	m.InitRunnerPackageDiscards(runner.DiscardReasons)
	cache, err := runner.NewCache(filepath.Join(stateDir, "cache"), runner.CacheOptions{Logger: log,
		OnDiscard: func(_, reason string) { m.RunnerPackageDiscarded(reason) }})
	if err != nil {
		return nil, classed(ErrLocalState, err)
	}
	cg := detectCgroups(log, runtime.GOOS)
	proc, err := runner.NewLauncher(runner.LauncherOptions{RuntimeRoot: runtimeRoot,
		LegacyRoots: []string{filepath.Join(stateDir, "runners")}, ShimExecutable: o.ShimExecutable, Logger: log,
		Cgroups: cg.cgroups, AfterCgroup: cg.crashHook(o.Crash)})
	if err != nil {
		return nil, classed(ErrLocalState, err)
	}
	lc := newLauncher(cache, proc, gh, users, j.HostID(), time.Now)
	lc.diag = &diagKeeper{journal: j, root: diag.Root(stateDir), redactor: o.Redactor, log: log, now: time.Now}
	ex, err := newExecutors(lc, cfg, j.HostID(), o.Redactor, o.Crash)
	if err != nil {
		return nil, classed(ErrConfigInvalid, err)
	}
	ex.sweepContainers(ctx, cfg, j, log)
	var sup *engine.Supervisor
	sets := scalesetdemand.New(scalesetdemand.Options{Account: gh.scaleSetAccount, Now: o.Now, Store: j, Owner: hostName(),
		Logger: log, Wake: func(target string) { sup.Wake(target) }, Crash: o.Crash, Metrics: m, Classify: classify})
	demand := demandFor{rest: gh, sets: sets}
	deps := engine.Deps{
		Journal:   j,
		Demand:    demand,
		Registrar: demand,
		Launcher:  ex,
		Logger:    log,
		Crash:     o.Crash,
		Observer:  m,
		Pacer:     pc,
		Disk:      freeSpace{},
	}
	var woken atomic.Pointer[engine.Supervisor] // the fleet may wake a loop before the supervisor exists
	fl, err := joinFleet(ctx, cfg, j.HostID(), log, m, gh, func(target string) {
		if s := woken.Load(); s != nil {
			s.Wake(target)
		}
	}, sets)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && fl != nil {
			_ = fl.Close()
		}
	}()
	if fl != nil {
		deps.Fleet = fl
		sets.SetFleet(fl) // before any listener runs (run starts them)
	}
	// In a fleet too: a runner's end is concluded at once and the warm pool refilled by a light
	// pass that reads nothing from GitHub (engine fleetLight).
	opts := engine.Options{HostID: j.HostID(), RuntimeRoot: runtimeRoot, PolicyKey: policyKey, CallTimeout: o.CallTimeout, ExitCheck: exitCheck}
	sup = engine.New(deps, opts)
	woken.Store(sup)
	d := &daemon{o: o, log: log, lock: lock, journal: j, metrics: m, gh: gh, pacer: pc, sets: sets, sup: sup, fleet: fl, started: time.Now(), cgroups: cg}
	var rep engine.Report
	if err := applyConfig(ctx, d.appliers(&rep), nil, cfg); err != nil {
		return nil, fmt.Errorf("apply %s: %w", o.ConfigPath, err)
	}
	m.ConfigReload(true, rep.Generation, time.Now()) // the startup load counts as a reload
	m.SetTargetSource(d.targetGauges)
	m.SetContactAccountSource(func() []string { return accountsInUse(d.config()) })
	return d, nil
}

// joinFleet joins the [fleet] before any loop runs (nil without one). A refused membership (the
// name is another live host's, or another journal's) stops the start: two hosts under one name
// would count each other's runners as their own. sets is the scale-set demand source: its
// listeners follow every change of leadership or membership, and its queue news travels in the
// leader's view. gov is the request governor whose ceiling the fleet's hosts share.
func joinFleet(ctx context.Context, cfg *config.Config, hostID string, log *slog.Logger, m *metrics.Metrics, gov fleet.Governor, wake func(string), sets *scalesetdemand.Source) (*fleet.Fleet, error) {
	if cfg.Fleet == nil {
		return nil, nil
	}
	name := cfg.Fleet.Name
	fl, err := fleet.New(fleet.Options{Config: *cfg.Fleet, HostID: hostID, Logger: log, Wake: wake,
		OnJoined: func(joined bool) { m.FleetJoined(name, joined); sets.RolesChanged() }, OnAlone: m.FleetTargetAlone,
		OnLead: func(target string, leads bool) { m.FleetLeader(target, leads); sets.RolesChanged() }, Governor: gov, Sets: sets})
	if err != nil {
		return nil, classed(ErrLocalState, err)
	}
	m.FleetJoined(name, false)
	if err := fl.Start(ctx); err != nil {
		_ = fl.Close()
		if errors.Is(err, fleet.ErrDuplicateHost) || errors.Is(err, fleet.ErrHostIDMismatch) {
			return nil, classed(ErrConflict, err)
		}
		return nil, err
	}
	return fl, nil
}

// exitCheck is how often each loop checks locally whether one of its runner processes ended, so
// an ended runner is concluded (its slot freed, its directory removed) within seconds rather than
// at the next poll, which is minutes away in webhook mode or when intervals stretch.
const exitCheck = 2 * time.Second

// policyKeyMeta names the journal value holding this host's key for launch-policy fingerprints.
const policyKeyMeta = "policy_key"

// policyKey returns this host's fingerprint key (engine.Options.PolicyKey), created on first use:
// 32 random bytes that never leave the journal.
func policyKey(ctx context.Context, j *journal.Journal) ([]byte, error) {
	key, ok, err := j.GetMeta(ctx, policyKeyMeta)
	if err != nil {
		return nil, fmt.Errorf("read the policy fingerprint key from the journal: %w", err)
	}
	if ok && len(key) == 32 {
		return key, nil
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate the policy fingerprint key: %w", err)
	}
	if err := j.PutMeta(ctx, policyKeyMeta, key); err != nil {
		return nil, fmt.Errorf("store the policy fingerprint key in the journal: %w", err)
	}
	return key, nil
}

// hostName is the ownerName of this host's scale-set sessions, the name GitHub shows in a conflict.
func hostName() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "runner-manager"
}

func (d *daemon) config() *config.Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg
}

// failedStart records, with self-update on, a start whose config could not be loaded as a start
// of this version that never became healthy, so a new version that rejects the existing file is
// rolled back by the crash-loop guard instead of restart-looping. The record goes under the
// state_dir the rejected file names (where `status` finds it too), or the default. It reports
// whether the guard rolled back (the caller exits with "upgrade pending").
func failedStart(ctx context.Context, o Options, loadErr error) bool {
	if o.Upgrade.Source == "" {
		return false
	}
	stateDir := config.DefaultStateDir
	var cerr *config.Error
	if errors.As(loadErr, &cerr) && cerr.StateDir != "" {
		stateDir = cerr.StateDir
	}
	log := logging.NewWith(o.Stderr, logging.Options{Level: "info", Format: "auto", IsTTY: o.IsTTY, Redactor: o.Redactor})
	guard, err := newGuard(o, stateDir, log)
	if err == nil {
		err = os.MkdirAll(stateDir, 0o700)
	}
	if err != nil {
		log.Error("self-update: cannot record this failed start; the crash-loop guard is blind", "err", err)
		return false
	}
	rolledBack, err := guard.OnStart(ctx)
	if err != nil {
		log.Error("self-update: cannot record this failed start; the crash-loop guard is blind", "err", err)
	}
	return rolledBack
}

// watchHealth records the config watch's health for status and metrics, and logs a loss once.
func (d *daemon) watchHealth(err error) {
	d.mu.Lock()
	d.watchErr = err
	d.mu.Unlock()
	d.metrics.ConfigWatch(err == nil)
	if err != nil {
		d.log.Error("config file watch lost: edits are still seen within 10 s by a stat check, and SIGHUP reloads at once; "+
			"fix the cause (often fs.inotify.max_user_watches) and restart the daemon to watch again",
			"path", d.o.ConfigPath, "err", err)
		return
	}
	d.log.Info("config file watch restored", "path", d.o.ConfigPath)
}

// learnSecrets teaches r the secrets of a load's outcome (config.Secrets) before anything about
// it is logged or served.
func learnSecrets(r *redact.Redactor, cfg *config.Config, err error) {
	paths, values := config.Secrets(cfg, err)
	r.LearnFiles(paths...)
	r.Learn(values...)
}
