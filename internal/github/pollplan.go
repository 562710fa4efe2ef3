package github

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

// PassPoints is what one idle reconcile pass of a target costs in secondary-limit points, by what
// QueuedJobs and ListRunners send: the runner list, then queued and in_progress runs of each
// repository, and for an organization its repository list (100 a page). A 304 costs as much as a
// 200 (GitHub does not exempt it), so this is also the cost of a quiet target.
func PassPoints(org bool, repos int) int {
	if !org {
		return 1 + len(runStatuses)
	}
	return 1 + max(1, (repos+99)/100) + len(runStatuses)*repos
}

// pollShare is the part of the sustainable rate that polls may plan to use; the rest is left for
// launches (5 points each), deletions and the first full reads after a change.
const pollShare = 0.8

// PollTarget is one target's polling as configured: its interval and the points of one pass.
type PollTarget struct {
	Name     string
	Interval time.Duration
	Points   int
}

// PollPlan says how often and when each target may poll so that all of them fit the governor's
// ceiling: when they do not, every interval stretches by the same factor (fair: each target keeps
// its share), and Message says so. Phases spread the targets evenly over their interval, so passes
// do not start together.
type PollPlan struct {
	Ceiling  int     // points a minute
	Need     int     // points a minute the targets need at their configured intervals
	Stretch  float64 // >= 1: the factor every interval is multiplied by
	Message  string  // "" when nothing stretches
	interval map[string]time.Duration
	phase    map[string]float64 // fraction of the interval, in [0, 1)
	// StartWindow is how long the planned rate takes for one pass of every target: first passes
	// (a start, a restart's recovery) spread over it rather than over a whole interval.
	StartWindow time.Duration
}

// PlanPolls plans targets under a points ceiling (GovernorOptions.PointsPerMinute; 0 = default).
func PlanPolls(ceiling int, targets []PollTarget) PollPlan {
	ceiling = GovernorOptions{PointsPerMinute: ceiling}.withDefaults().PointsPerMinute
	o := GovernorOptions{PointsPerMinute: ceiling}
	budget := float64(o.pointsRefill()) * pollShare // what the points bucket sustains
	p := PollPlan{Ceiling: ceiling, Stretch: 1, interval: map[string]time.Duration{}, phase: map[string]float64{}}
	need, once := 0.0, 0
	for _, t := range targets {
		if t.Interval > 0 {
			need += float64(t.Points) * float64(time.Minute) / float64(t.Interval)
		}
		once += t.Points
	}
	p.StartWindow = time.Duration(float64(once) / budget * float64(time.Minute))
	p.Need = int(math.Ceil(need))
	if need > budget {
		p.Stretch = need / budget
	}
	names := make([]string, 0, len(targets))
	for _, t := range targets {
		iv := t.Interval
		if p.Stretch > 1 {
			iv = time.Duration(math.Ceil(float64(iv)*p.Stretch/float64(time.Second))) * time.Second
		}
		p.interval[t.Name] = iv
		names = append(names, t.Name)
	}
	slices.Sort(names)
	for i, n := range names {
		p.phase[n] = float64(i) / float64(len(names))
	}
	if p.Stretch > 1 {
		p.Message = p.describe(targets)
	}
	return p
}

// PlanConfig is PlanAccount of the [github] account.
func PlanConfig(cfg *config.Config, interval func(config.Target) time.Duration, count func(org string) (int, bool)) PollPlan {
	return PlanAccount(cfg, config.DefaultAccount, interval, count)
}

// PlanAccount plans the enabled targets of cfg that poll through account (config.DefaultAccount:
// [github]), each at interval(t), under that account's ceiling: each account has its own governor,
// so one account's targets never stretch another's. An organization is costed by count(org), or as
// one repository while it has not been listed yet (its next plan knows better). Scale-set targets
// make no REST call in their passes.
func PlanAccount(cfg *config.Config, account string, interval func(config.Target) time.Duration, count func(org string) (int, bool)) PollPlan {
	if cfg == nil {
		return PlanPolls(0, nil)
	}
	var ts []PollTarget
	for _, t := range cfg.EnabledTargets() {
		if name, _, _ := cfg.AccountOf(t); t.ScaleSet != "" || name != account {
			continue // demand comes from the scale set's queue; another account has its own ceiling
		}
		pts := PassPoints(false, 1)
		switch {
		case t.Enterprise != "":
			pts = 1 // its runner list: its jobs come from webhooks
		case t.Organization != "":
			n, ok := count(t.Organization)
			if !ok {
				n = 1
			}
			pts = PassPoints(true, n)
		}
		ts = append(ts, PollTarget{Name: t.Name, Interval: interval(t), Points: pts})
	}
	gc, _ := cfg.GitHubOf(account)
	return PlanPolls(gc.PointsPerMinute, ts)
}

func (p PollPlan) describe(targets []PollTarget) string {
	base, same := targets[0].Interval, true
	for _, t := range targets {
		same = same && t.Interval == base
	}
	if same {
		return fmt.Sprintf("%d targets need %d points/min at poll_interval %s; the ceiling is %d: polling every %s instead",
			len(targets), p.Need, base, p.Ceiling, p.interval[targets[0].Name])
	}
	return fmt.Sprintf("%d targets need %d points/min at their poll intervals; the ceiling is %d: every interval is %.1fx longer",
		len(targets), p.Need, p.Ceiling, p.Stretch)
}

// Interval is target name's planned interval; base when the plan does not know it.
func (p PollPlan) Interval(name string, base time.Duration) time.Duration {
	if iv, ok := p.interval[name]; ok {
		return iv
	}
	return base
}

// Phase is where in each interval target name's passes fall: its slots are the instants
// phase + k*interval (k whole, counted from the Unix epoch), the same grid for every target.
func (p PollPlan) Phase(name string, interval time.Duration) time.Duration {
	return time.Duration(p.phase[name] * float64(interval))
}

// noteRepoCount records how many repositories organization org had at its last listing.
func (c *Client) noteRepoCount(org string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.repoCounts == nil {
		c.repoCounts = map[string]int{}
	}
	if old, ok := c.repoCounts[strings.ToLower(org)]; !ok || old != n {
		c.repoCounts[strings.ToLower(org)] = n
		c.repoCountsVersion++
	}
}

// RepoCountsVersion changes whenever an organization's repository count does, so a plan built
// from RepoCount knows when it is stale.
func (c *Client) RepoCountsVersion() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.repoCountsVersion
}

// RepoCount is how many repositories organization org had at its last listing (false: not listed yet).
func (c *Client) RepoCount(org string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.repoCounts[strings.ToLower(org)]
	return n, ok
}
