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

// planFor costs every enabled target at its configured interval. An organization not listed yet
// counts as one repository; its next plan, after the first pass, knows better.
func planFor(cfg *config.Config, c *github.Client) github.PollPlan {
	if cfg == nil {
		return github.PlanPolls(0, nil)
	}
	var ts []github.PollTarget
	for _, t := range cfg.EnabledTargets() {
		if t.ScaleSet != "" {
			continue // its passes make no REST call: demand comes from the scale set's queue
		}
		pts := github.PassPoints(false, 1)
		if t.Organization != "" {
			n, ok := 0, false
			if c != nil {
				n, ok = c.RepoCount(t.Organization)
			}
			if !ok {
				n = 1
			}
			pts = github.PassPoints(true, n)
		}
		ts = append(ts, github.PollTarget{Name: t.Name, Interval: engine.PollInterval(cfg, t), Points: pts})
	}
	return github.PlanPolls(cfg.GitHub.PointsPerMinute, ts)
}

func (p *pacer) Interval(name string, base time.Duration) time.Duration {
	return p.current().Interval(name, base)
}

func (p *pacer) Phase(name string, interval time.Duration) time.Duration {
	return p.current().Phase(name, interval)
}
