package daemon

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/github"
	"github.com/runner-manager/runner-manager/internal/redact"
	"github.com/runner-manager/runner-manager/internal/status"
	"github.com/runner-manager/runner-manager/internal/version"
)

// scrubbedSnapshot is snapshot with every string scrubbed by the daemon's Redactor: a rejected
// reload's problems (last_reload.error), event messages and target errors can echo anything the
// file held. Both the socket and status_listen serve only this.
func (d *daemon) scrubbedSnapshot(ctx context.Context) (status.Snapshot, error) {
	snap, err := d.snapshot(ctx)
	if err != nil {
		return snap, err
	}
	clean, err := redact.Value(d.o.Redactor, snap)
	if err != nil {
		return status.Snapshot{}, fmt.Errorf("scrubbing the status of secrets: %w", err)
	}
	return clean, nil
}

// snapshot is the status socket's Source: the engine's view, the journal's runners and the last
// good config, without any GitHub call (status must answer while GitHub is down).
func (d *daemon) snapshot(ctx context.Context) (status.Snapshot, error) {
	st := d.sup.Status()
	cfg := d.config()
	snap := status.Snapshot{
		Version:    version.Current(),
		PID:        os.Getpid(),
		StartedAt:  d.started,
		MaxRunners: cfg.Daemon.MaxRunners,
		Draining:   st.Draining,
		Config: status.Config{
			Generation: st.Generation,
			Path:       d.o.ConfigPath,
			LastReload: status.Reload{OK: st.LastReload.OK, At: st.LastReload.Time},
			Watch:      d.watchStatus(),
		},
		Targets: []status.Target{},
		Runners: []status.Runner{},
		Events:  []status.Event{},
	}
	if e := st.LastReload.Error; e != "" {
		snap.Config.LastReload.Error = strings.Split(strings.TrimSpace(e), "\n")
	}
	if len(cfg.EnabledTargets()) > 0 {
		plans := d.pacer.all()
		snap.GitHubPollingByAccount = make(map[string]*status.Polling, len(plans))
		for name, pl := range plans {
			snap.GitHubPollingByAccount[name] = d.polling(d.gh.account(name), pl)
		}
		// github_polling stays the [github] account's plan, with every account's use summed, as
		// it was before accounts.
		snap.GitHubPolling = d.polling(d.gh, plans[config.DefaultAccount])
		snap.GitHubPolling.UsedPerMinute = d.gh.usedPerMinute()
	}
	if c, err := d.journal.GitHubContacts(ctx); err == nil {
		snap.GitHubLastContact = c.Newest
		// Each configured account's own, without the host-wide fallback: an account that never
		// answered says so instead of borrowing another's time. With [github] alone the
		// document is as it was before accounts.
		if names := cfg.AccountNames(); len(names) > 1 {
			snap.GitHubLastContactByAccount = make(map[string]time.Time, len(names))
			for _, name := range names {
				if t, ok := c.ByAccount[name]; ok {
					snap.GitHubLastContactByAccount[name] = t
				}
			}
		}
	}
	for _, ts := range st.Targets {
		t := status.Target{
			Name: ts.Name, Scope: ts.Identity, Mode: ts.Mode, Enabled: true,
			Demand: ts.Demand, Owned: ts.Owned, Starting: ts.Starting, Busy: ts.Busy, Idle: ts.Idle,
			Draining: ts.Draining, LastError: ts.LastError, Warning: ts.Warning, LastPass: ts.LastPass, Failures: ts.Failures,
			Backoff: status.Backoff{Active: ts.Backoff != "", Until: ts.BackoffUntil, Reason: ts.Backoff},
		}
		if ss, ok := d.sets.Status(ts.Name); ok && ts.Identity == ss.Identity {
			t.ScaleSet = &status.ScaleSet{Name: ss.Name, ID: ss.ID, Session: ss.Session, Waiting: ss.Waiting, LastError: ss.LastError,
				AssignedJobs: ss.Statistics.TotalAssignedJobs, RunningJobs: ss.Statistics.TotalRunningJobs, AvailableJobs: ss.Statistics.TotalAvailableJobs}
		}
		if p50, p95, n := d.metrics.QueueLatency(ts.Name); n > 0 {
			t.QueueLatency = &status.Latency{Jobs: n, P50Seconds: p50.Seconds(), P95Seconds: p95.Seconds()}
		}
		if ct, ok := cfg.Target(ts.Name); ok {
			t.MaxRunners = ct.MaxRunners
			t.Enabled = ct.IsEnabled()
			t.Schedule = ScheduleStatus(ct, d.now())
			if name, _, _ := cfg.AccountOf(ct); name != config.DefaultAccount {
				t.Account = name
			}
		} else {
			t.Enabled = false
		}
		snap.Targets = append(snap.Targets, t)
	}
	live, err := d.journal.Live(ctx)
	if err != nil {
		return status.Snapshot{}, err
	}
	for _, a := range live {
		snap.Runners = append(snap.Runners, status.Runner{
			ID: a.RunnerID, Name: a.RunnerName, Target: a.Target, State: string(a.State),
			StartedAt: a.CreatedAt, JobID: a.JobID,
		})
	}
	for _, e := range st.Events {
		snap.Events = append(snap.Events, status.Event{At: e.Time, Target: e.Target, Attempt: e.Attempt, Kind: string(e.Kind), Message: e.Message})
	}
	if d.fleet != nil {
		snap.Fleet = d.fleet.Status()
	}
	if cg := d.cgroups; cg.cgroups != nil {
		snap.Isolation = &status.Isolation{Cgroups: true, CgroupRoot: cg.cgroups.Root()}
	} else {
		snap.Isolation = &status.Isolation{NoCgroups: cg.missing}
	}
	return snap, nil
}

// polling is the status of one account's poll plan pl, a its gitHub.
func (d *daemon) polling(a *gitHub, pl github.PollPlan) *status.Polling {
	p := &status.Polling{PointsPerMinute: pl.Ceiling, NeedPerMinute: pl.Need, Stretch: pl.Stretch, Message: pl.Message,
		UsedPerMinute: a.usedOne()}
	if d.fleet != nil {
		p.Fleet = a.pollingFleet(pl.Ceiling)
	}
	return p
}

func (d *daemon) watchStatus() *status.Watch {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.watchErr != nil {
		return &status.Watch{Error: d.watchErr.Error()}
	}
	return &status.Watch{Healthy: true}
}
