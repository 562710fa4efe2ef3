package daemon

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/github"
)

// pacer is the engine's Pacer: the poll plan (internal/github.PlanPolls) of the config in force,
// with each organization costed by its repository count at its last listing. The plan is rebuilt
// when the config or a count changes; a change that stretches intervals is logged once.
type pacer struct {
	gh     *gitHub
	cfg    atomic.Pointer[config.Config]
	onPlan func(github.PollPlan) // told of every new plan

	mu   sync.Mutex
	from *config.Config
	ver  int
	plan github.PollPlan
}

var _ engine.Pacer = (*pacer)(nil)

func (p *pacer) set(cfg *config.Config) { p.cfg.Store(cfg) }

// current returns the plan for the config in force.
func (p *pacer) current() github.PollPlan {
	cfg := p.cfg.Load()
	p.gh.mu.Lock()
	c := p.gh.client
	p.gh.mu.Unlock()
	ver := -1
	if c != nil {
		ver = c.RepoCountsVersion()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cfg == p.from && ver == p.ver && p.from != nil {
		return p.plan
	}
	p.from, p.ver = cfg, ver
	p.plan = planFor(cfg, c)
	if p.onPlan != nil {
		p.onPlan(p.plan)
	}
	return p.plan
}

// planFor costs every enabled target at its configured interval, each organization by its
// repository count at its last listing (github.PlanConfig).
func planFor(cfg *config.Config, c *github.Client) github.PollPlan {
	count := func(org string) (int, bool) {
		if c == nil {
			return 0, false
		}
		return c.RepoCount(org)
	}
	return github.PlanConfig(cfg, func(t config.Target) time.Duration { return engine.PollInterval(cfg, t) }, count)
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
	return p.current().Interval(name, base)
}

func (p *pacer) Phase(name string, interval time.Duration) time.Duration {
	return p.current().Phase(name, interval)
}

func (p *pacer) StartWindow() time.Duration { return p.current().StartWindow }
