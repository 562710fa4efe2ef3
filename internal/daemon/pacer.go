package daemon

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/github"
)

// pacer is the engine's Pacer: the poll plans (internal/github.PlanAccount) of the config in
// force, one per account, since each account has its own governor and ceiling: an account whose
// targets do not fit stretches its own targets' intervals only. Each organization is costed by its
// repository count at its account's client's last listing. An account's plan is rebuilt when the
// config or one of its counts changes; a change that stretches intervals is logged once.
type pacer struct {
	gh     *gitHub
	cfg    atomic.Pointer[config.Config]
	onPlan func(plans map[string]github.PollPlan, changed []string) // told of every new plan, by account

	mu    sync.Mutex
	from  *config.Config
	vers  map[string]int             // each account's client's RepoCountsVersion the plans were built from
	plans map[string]github.PollPlan // by account
	of    map[string]string          // target name -> its account
}

var _ engine.Pacer = (*pacer)(nil)

func (p *pacer) set(cfg *config.Config) { p.cfg.Store(cfg) }

// all returns every account's plan for the config in force, rebuilding those that are stale
// (status's github_polling_by_account, and [github]'s as github_polling).
func (p *pacer) all() map[string]github.PollPlan {
	cfg := p.cfg.Load()
	vers := map[string]int{}
	clients := map[string]*github.Client{}
	if cfg != nil {
		for _, name := range cfg.AccountNames() {
			vers[name] = -1
			if c := p.gh.account(name).current(); c != nil {
				clients[name], vers[name] = c, c.RepoCountsVersion()
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cfg == p.from && p.from != nil && maps.Equal(vers, p.vers) {
		return p.plans
	}
	plans, of := map[string]github.PollPlan{}, map[string]string{}
	var changed []string
	for name, ver := range vers {
		if old, ok := p.plans[name]; ok && cfg == p.from && p.vers[name] == ver {
			plans[name] = old
			continue
		}
		plans[name] = planFor(cfg, name, clients[name])
		changed = append(changed, name)
	}
	if cfg == nil {
		plans[config.DefaultAccount] = planFor(nil, config.DefaultAccount, nil)
		changed = append(changed, config.DefaultAccount)
	} else {
		for _, t := range cfg.EnabledTargets() {
			of[t.Name], _, _ = cfg.AccountOf(t)
		}
	}
	slices.Sort(changed)
	p.from, p.vers, p.plans, p.of = cfg, vers, plans, of
	if p.onPlan != nil {
		p.onPlan(plans, changed)
	}
	return plans
}

// planOf is the plan of target name's account: the [github] account's for a name it does not know.
func (p *pacer) planOf(name string) github.PollPlan {
	plans := p.all()
	p.mu.Lock()
	account, ok := p.of[name]
	p.mu.Unlock()
	if !ok {
		account = config.DefaultAccount
	}
	return plans[account]
}

// planFor costs every enabled target of account at its configured interval, each organization by
// its repository count at its last listing by c, the account's client (github.PlanAccount).
func planFor(cfg *config.Config, account string, c *github.Client) github.PollPlan {
	count := func(org string) (int, bool) {
		if c == nil {
			return 0, false
		}
		return c.RepoCount(org)
	}
	return github.PlanAccount(cfg, account, func(t config.Target) time.Duration { return engine.PollInterval(cfg, t) }, count)
}

// idleEvery is how many of t's passes an idle repository waits between reads
// (github.WithIdleEvery): its idle_poll_interval over its poll interval, rounded, at least 1.
func (p *pacer) idleEvery(t config.Target) int {
	cfg := p.cfg.Load()
	poll := engine.PollInterval(cfg, t)
	idle := config.DefaultIdlePollFactor * poll
	if cfg != nil {
		idle = cfg.IdlePollIntervalOf(t, poll)
	}
	return max(1, int((idle+poll/2)/poll))
}

func (p *pacer) Interval(name string, base time.Duration) time.Duration {
	return p.planOf(name).Interval(name, base)
}

func (p *pacer) Phase(name string, interval time.Duration) time.Duration {
	return p.planOf(name).Phase(name, interval)
}

// StartWindow is the longest of the accounts' start windows: the accounts' governors pace their
// first passes side by side, so the slowest account's is how long one pass of every target takes.
func (p *pacer) StartWindow() time.Duration {
	var w time.Duration
	for _, pl := range p.all() {
		w = max(w, pl.StartWindow)
	}
	return w
}
