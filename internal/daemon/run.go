package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/httpserve"
	"github.com/runner-manager/runner-manager/internal/readiness"
	"github.com/runner-manager/runner-manager/internal/secretfile"
	"github.com/runner-manager/runner-manager/internal/status"
	"github.com/runner-manager/runner-manager/internal/webhook"
	"github.com/runner-manager/runner-manager/selfupdate"
)

// run supervises until ctx ends or an upgrade is installed, then stops every part in order:
// the engine drains first (bounded), the listeners last, the journal and the lock after them.
func (d *daemon) run(ctx context.Context) (err error) {
	defer d.close()
	d.probe = make(chan chan struct{}) // before the reload loop and the watchdog start
	d.reloadReq = make(chan chan<- status.ReloadResult)
	cfg := d.config()
	// Built before any part starts, so a refusal (unreadable secret) leaves nothing running.
	var hook *webhook.Server
	if wh := cfg.Webhook; wh != nil {
		var err error
		if hook, err = d.webhookServer(*wh); err != nil {
			return fmt.Errorf("webhook: %w", err)
		}
	}
	statusTCP, err := d.statusTCPHandler(cfg.Daemon)
	if err != nil {
		return err
	}

	// parts ends the listeners, watchers and the supervisor's loops; ctx (the caller's) ends the daemon.
	parts, stopParts := context.WithCancel(context.WithoutCancel(ctx))
	defer stopParts()
	g, gctx := errgroup.WithContext(parts)

	g.Go(func() error { return d.sup.Run(gctx) })
	if d.fleet != nil {
		// Stopped with the other parts, after the drain: the host's supply counts until it leaves.
		g.Go(func() error { return d.fleet.Run(gctx) })
	}
	// The scale-set listeners stop with the parts, after the engine's drain: stopping deletes
	// their sessions and ends a long poll in flight.
	g.Go(func() error { d.sets.Run(gctx); return nil })

	changes := make(chan fileChange)
	if d.watcher != nil {
		g.Go(func() error {
			d.watcher.Run(gctx, func(data []byte, err error) {
				select {
				case changes <- fileChange{data, err}:
				case <-gctx.Done():
				}
			})
			return nil
		})
	}
	g.Go(func() error { d.reloadLoop(gctx, changes); return nil })

	// Every endpoint is bound before the daemon reports that it runs, so a client started on that
	// signal (a webhook delivery, `runner-manager status`, a scrape) is never refused. A bind
	// failure is logged and leaves that endpoint off, as a failure to serve it later would.
	sock := status.SocketPath(cfg.Daemon.StateDir)
	if sl, err := status.Listen(gctx, sock); err != nil {
		d.log.Error("status socket stopped; `runner-manager status` will not answer", "socket", sock, "err", err)
	} else {
		g.Go(func() error {
			if err := sl.Serve(gctx, statusSource{d}, d.log); err != nil && gctx.Err() == nil {
				d.log.Error("status socket stopped; `runner-manager status` will not answer", "socket", sock, "err", err)
			}
			return nil
		})
	}
	if addr := cfg.Daemon.StatusListen; addr != "" && addr != "unix" {
		if ln := d.listen(gctx, "status", "daemon.status_listen", addr); ln != nil {
			g.Go(func() error {
				return d.serveHTTP(gctx, "status", addr, ln, statusTCP)
			})
		}
	}
	if addr := cfg.Daemon.MetricsListen; addr != "" {
		if ln := d.listen(gctx, "metrics", "daemon.metrics_listen", addr); ln != nil {
			g.Go(func() error {
				if err := d.metrics.ServeListener(gctx, ln, d.log); err != nil && gctx.Err() == nil {
					d.log.Error("metrics endpoint stopped", "listen", addr, "err", err)
				}
				return nil
			})
		}
	}
	if wh := cfg.Webhook; wh != nil {
		if ln := d.listen(gctx, "webhook", "webhook.listen", wh.Listen); ln != nil {
			g.Go(func() error {
				if err := hook.Serve(gctx, ln); err != nil && gctx.Err() == nil {
					d.log.Error("webhook listener stopped; demand falls back to polling", "listen", wh.Listen, "err", err)
				}
				return nil
			})
		}
	}
	upgraded := make(chan error, 1)
	if d.guard != nil {
		g.Go(func() error { _ = d.guard.AwaitHealthy(gctx); return nil })
	}
	if d.o.Upgrade.Source != "" {
		g.Go(func() error {
			err := d.upgradeLoop(gctx)
			if errors.Is(err, selfupdate.ErrUpgradePending) {
				upgraded <- err
			}
			return nil
		})
	}

	notify := notifier{log: d.log}
	// Before the loops' first passes: startup recovery is watched too. It ends with the parts,
	// after the drain, so a drain is watched as well.
	g.Go(func() error { d.watchdogLoop(gctx, notify); return nil })
	select { // the loops run (journal read, live runners adopted); a Run that failed ends gctx
	case <-d.sup.Started():
	case <-gctx.Done():
	}
	if d.fleet != nil {
		d.fleet.WakeLeads() // a leadership won while joining woke no loop
	}
	d.log.Info(readiness.DaemonLine(os.Getpid()))
	notify.ready(d.sup.Status())
	g.Go(func() error { d.statusLoop(gctx, notify); return nil })

	var result error
	select {
	case <-ctx.Done():
		bound := d.config().Daemon.ShutdownDrainTimeout.D()
		notify.stopping(bound)
		d.log.Info("shutting down: draining", "bound", bound.String())
	case result = <-upgraded:
		notify.send("STOPPING=1", "STATUS=upgrade installed; handing over to the new binary")
		d.log.Info("upgrade installed; handing over to the new binary")
	}
	d.sets.SetDraining(true)
	rep, serr := d.sup.Shutdown(context.WithoutCancel(ctx))
	stopParts()
	_ = g.Wait()
	if d.guard != nil {
		if err := d.guard.MarkStopped(); err != nil {
			d.log.Error("self-update: cannot record a clean stop", "err", err)
		}
	}
	switch {
	case serr != nil:
		d.log.Error(fmt.Sprintf("daemon stopped; shutdown drain failed: %v", serr))
	case rep.Left == 0:
		d.log.Info("daemon stopped; no runner left running")
	default:
		d.log.Info(fmt.Sprintf("daemon stopped; %d runner(s) left running for recovery (%d busy)", rep.Left, rep.LeftBusy))
	}
	return result
}

// statusInterval is how often `systemctl status` gets a fresh summary line.
const statusInterval = 15 * time.Second

// statusLoop keeps systemd's STATUS= line current until ctx ends.
func (d *daemon) statusLoop(ctx context.Context, notify notifier) {
	t := time.NewTicker(statusInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			notify.status(d.sup.Status())
		}
	}
}

func (d *daemon) close() {
	if d.fleet != nil {
		_ = d.fleet.Close()
	}
	if err := d.journal.Close(); err != nil {
		d.log.Error("closing the journal", "err", err)
	}
	if err := d.lock.Release(); err != nil {
		d.log.Error("releasing the host lock", "err", err)
	}
}

// fileChange is a settled new content of the config file, or why it cannot be read.
type fileChange struct {
	data []byte
	err  error
}

// reloadLoop serialises every reload trigger (a settled file change, SIGHUP or the Windows
// service's paramchange, `runner-manager reload`) into one load+apply at a time, and answers a
// reload request with its outcome. SIGHUP and a request read the file at once, without the settle. A missing file is held back for
// MissingFileGrace (absence) before it counts as a failed reload: tools that delete and rewrite
// the file, or rename its directory away and back, leave it missing for a moment.
func (d *daemon) reloadLoop(ctx context.Context, changes <-chan fileChange) {
	after := d.o.After
	if after == nil {
		after = time.After
	}
	var gone absence
	var grace <-chan time.Time // fires when a missing file's grace ends; nil while none runs
	for {
		var err error
		var cfg *config.Config
		var answer chan<- status.ReloadResult // a reload request's, nil for the other triggers
		select {
		case <-ctx.Done():
			return
		case answer := <-d.probe: // the watchdog asks whether the reload path answers
			close(answer)
			continue
		case ch := <-changes:
			if err = ch.err; err == nil {
				cfg, err = config.LoadBytes(d.o.ConfigPath, ch.data, config.Options{})
			}
		case <-d.o.Reload:
			d.log.Info("reload requested (SIGHUP, or the Windows service's paramchange)")
			cfg, err = config.Load(d.o.ConfigPath)
		case answer = <-d.reloadReq:
			d.log.Info("reload requested (runner-manager reload)")
			cfg, err = config.Load(d.o.ConfigPath)
		case <-grace:
			grace = nil
			cfg, err = config.Load(d.o.ConfigPath) // still missing: a failed reload from now on
		}
		now := d.now()
		wasWaiting := gone.waiting(now)
		if hold := gone.seen(err, now); hold > 0 {
			if !wasWaiting {
				d.log.Warn("config file is missing: waiting for the file to come back; the last good config keeps running",
					"path", d.o.ConfigPath, "fails_after", hold.String())
			}
			grace = after(hold)
			if answer != nil {
				answer <- d.rejected(fmt.Errorf("%s is missing: %w; the last good config keeps running, and the reload counts as failed if the file is still missing in %s",
					d.o.ConfigPath, err, hold.Round(time.Second)))
			}
			continue
		}
		grace = nil
		learnSecrets(d.o.Redactor, cfg, err)
		res := d.reload(ctx, cfg, err)
		if answer != nil {
			answer <- res
		}
	}
}

// reload applies a loaded config; an invalid or unreadable file changes nothing (the last good
// config keeps running) and is reported with every positioned problem, one log record each. The
// result is what `runner-manager reload` is told.
func (d *daemon) reload(ctx context.Context, cfg *config.Config, err error) status.ReloadResult {
	now := time.Now()
	if err == nil {
		err = d.restartOnly(cfg)
	}
	if err != nil {
		var cerr *config.Error
		if errors.As(err, &cerr) {
			for _, p := range cerr.Problems {
				if p.Severity == config.SeverityWarning {
					d.log.Warn("config warning", "problem", p.String())
					continue
				}
				d.log.Error("config rejected; the last good config keeps running", "problem", p.String())
			}
			// Status and the event name what refused the file, not the warnings beside it.
			if errs := cerr.Errors(); len(errs) > 0 {
				err = &config.Error{Problems: errs, StateDir: cerr.StateDir}
			}
		} else {
			d.log.Error("config rejected; the last good config keeps running", "err", err)
		}
		d.sup.ReloadFailed(err)
		d.metrics.ConfigReload(false, 0, now)
		return d.rejected(err)
	}
	for _, w := range cfg.Warnings {
		d.log.Warn("config warning", "problem", w.String())
	}
	var rep engine.Report
	if err := applyConfig(ctx, d.appliers(&rep), d.config(), cfg); err != nil {
		d.log.Error("config rejected; the last good config keeps running", "err", err)
		d.sup.ReloadFailed(err)
		d.metrics.ConfigReload(false, 0, now)
		return d.rejected(err)
	}
	d.metrics.ConfigReload(true, rep.Generation, now)
	if rep.NoOp() {
		d.log.Info("config reloaded: no change", "generation", rep.Generation)
		return status.ReloadResult{Outcome: status.ReloadUnchanged, Generation: rep.Generation}
	}
	d.log.Info("config reloaded", "generation", rep.Generation, "added", rep.Added, "removed", rep.Removed,
		"disabled", rep.Disabled, "restarted", rep.Restarted, "changed", len(rep.Changed), "daemon", rep.Daemon)
	return status.ReloadResult{Outcome: status.ReloadApplied, Generation: rep.Generation, Changes: rep.Summary()}
}

// restartOnly refuses a reload that changes a restart-class key (config.Diff says which), so the
// operator is told instead of believing the change took effect.
func (d *daemon) restartOnly(cfg *config.Config) error {
	if keys := config.Diff(d.config(), cfg).Of(config.Restart); len(keys) > 0 {
		return fmt.Errorf("%s: changing %s needs a daemon restart (systemctl restart runner-manager); nothing was applied", d.o.ConfigPath, keys.Keys())
	}
	return nil
}

func (d *daemon) webhookServer(wh config.Webhook) (*webhook.Server, error) {
	secret, err := secretfile.Open("webhook.secret_file", wh.SecretFile, d.log)
	if err != nil {
		return nil, err
	}
	h := webhook.NewHandler(webhook.Options{
		Secret:   secret,
		Notify:   d.deliver,
		OnResult: d.metrics.WebhookDelivery,
		Log:      d.log,
	})
	return &webhook.Server{Path: wh.Path, Handler: h, Log: d.log}, nil
}

// deliver routes an accepted workflow_job delivery. A target polled over REST takes it as
// demand (engine Deliver: a queued job starts its runner without reading GitHub). A scale-set
// target's jobs come from the Actions service and a fleet's from its elected reader, so for
// those a queued or completed delivery only wakes a pass (in a fleet, on the reader's host too).
func (d *daemon) deliver(ev webhook.Event) {
	cfg := d.config()
	var direct []string
	for _, name := range webhook.Route(ev, cfg.EnabledTargets()) {
		if t, _ := cfg.Target(name); d.fleet == nil && t.ScaleSet == "" {
			direct = append(direct, name)
			continue
		}
		if ev.Action == "in_progress" {
			continue // seen busy on the next pass; a pass now would only spend budget
		}
		d.sup.Wake(name)
		if d.fleet != nil {
			d.fleet.Announce(context.Background(), name)
		}
	}
	if len(direct) > 0 {
		d.sup.Deliver(engine.JobEvent{Action: ev.Action, Job: engine.Job{ID: ev.JobID, Name: ev.JobName, Labels: ev.Labels,
			QueuedAt: ev.CreatedAt, Runner: ev.RunnerName}}, direct)
	}
}

// statusTCPHandler is the status API for daemon.status_listen: behind the bearer token of
// daemon.status_token_file when one is set. Without one, config validation has already refused
// any address off loopback.
func (d *daemon) statusTCPHandler(dc config.Daemon) (http.Handler, error) {
	h := status.Handler(statusSource{d})
	if dc.StatusTokenFile == "" {
		return h, nil
	}
	tok, err := secretfile.Open("daemon.status_token_file", dc.StatusTokenFile, d.log)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	return status.Bearer(h, tok), nil
}

// serveHTTP serves h on addr until ctx ends. A listener that fails is logged, not fatal: the
// runners matter more than the view of them.
// listen binds addr (the setting key) for endpoint what, or logs why it cannot and what to do, and
// returns nil: the endpoint is off, the rest of the daemon runs.
func (d *daemon) listen(ctx context.Context, what, key, addr string) net.Listener {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		d.log.Error("cannot listen; the endpoint is off: choose a free address for "+key+", or remove the setting",
			"endpoint", what, "listen", addr, "err", err)
		return nil
	}
	return ln
}

func (d *daemon) serveHTTP(ctx context.Context, what, addr string, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h} // httpserve gives it the daemon's timeouts
	if err := httpserve.Serve(ctx, what, srv, ln); err != nil {
		d.log.Error("endpoint stopped", "endpoint", what, "listen", addr, "err", err)
	}
	return nil
}
