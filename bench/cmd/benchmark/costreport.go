package main

import (
	"fmt"
	"time"
)

func (r results) renderCost(p printer, mode string) {
	var runs []costRun
	for _, c := range r.Cost {
		if c.mode == mode {
			runs = append(runs, c)
		}
	}
	if len(runs) == 0 {
		return
	}
	if mode == "webhook" {
		p("## 10. Cost per job, webhook mode: repository and organization targets at 100 ms round trips\n\n")
	} else {
		p("## 11. Cost per job, poll mode: repository and organization targets at 100 ms round trips\n\n")
	}
	p("One target, `max_runners` = jobs, on a simulator that enforces GitHub's secondary limits (900 points\n")
	p("a minute, 100 requests in flight) and answers every REST request %s late, as a distant GitHub\n", costLatency)
	p("would; the daemon's governor runs at its default ceiling (%d points a minute, 8 in flight). An\n", governorCeiling)
	p("organization's jobs are spread over its repositories. Once the target's first pass has ended\n")
	p("(\"first pass\": from the daemon's ready line until status shows the pass's end; it reads every\n")
	p("repository's queued and in-progress runs), jobs are queued one by one; the window runs from the\n")
	p("first queued to the last completed, and per job = window count / jobs. Requests and points\n")
	p("(GET 1, POST/DELETE 5, a 304 as much as a 200) are counted at the simulator's front, budget is\n")
	p("what the simulator charged the token; peak points a minute, in flight and 403/429 answers cover\n")
	p("the whole run, first pass included.\n\n")
	p("| target | mode | poll_interval | jobs (spacing, run time) | first pass | p50 | p95 | window | requests per job | budget per job | points per job | of which 304 | peak points / min | peak in flight | 403/429 answers | by endpoint (window) | command |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range runs {
		p("| %s | %s | %s | %d (every %s, %s each) | %s | %s | %s | %s | %.1f | %.1f | %.1f | %d | %d | %d | %s | %s | `%s -only %s` |\n",
			c.target(), c.mode, c.Poll, c.Jobs, c.Spacing, c.JobRun, secs(c.FirstPass), secs(percentile(c.Latencies, 50)), secs(percentile(c.Latencies, 95)),
			c.Window.Round(time.Second), c.perJob(c.Req.Requests), c.perJob(c.Budget), c.perJob(c.Req.Points), c.Req.NotModified,
			c.PeakPoints, c.PeakInFlight, limitedText(c.Limited), kinds(c.Req), r.self(), c.part)
	}
	if mode == "webhook" {
		p("\nA `queued` delivery is demand: the runner is registered (one JIT POST) without a pass, and\n")
		p("deliveries of `in_progress` and `completed` update state without reading GitHub, so a job reads\n")
		p("none of an organization's repositories and costs what a repository target's job does; the one\n")
		p("other request is the runner package's download list at the first launch. A job delivered while\n")
		p("a full pass reads an organization (the first pass, the slow poll) is launched at once too, but\n")
		p("its JIT POST takes its turn in the governor behind the reads already admitted (about a second\n")
		p("at these round trips).\n\n")
	} else {
		p("\nA job is found by the target's next read of its repository: a quiet repository is read every\n")
		p("`idle_poll_interval` (4 x `poll_interval`), and an organization's passes stretch when its\n")
		p("repositories cost more than the ceiling allows (2 + 2 N points a pass), so latency is that wait,\n")
		p("and the per-job counts are mostly the idle reads of the window. These runs and those of figure 12\n")
		p("ran at the same time, each with its own simulator and account.\n\n")
	}
	r.renderGoals(p, mode)
}

func (r results) renderLimits(p printer) {
	p("## 12. Secondary limits: 1,000 and 5,000 idle targets\n\n")
	p("Idle repository targets (no job queued; the 1,000 run also has an organization target of 300\n")
	p("repositories, all on one account) at poll_interval %s, on a simulator enforcing GitHub's secondary\n", r.Limits[0].Poll)
	p("limits (900 points a minute in any sliding minute, 100 requests in flight) with the governor at its\n")
	p("default ceiling (%d points a minute) unless the row says otherwise. Counted from the daemon's ready\n", governorCeiling)
	p("line, first passes included, for the whole window: requests and points at the front, the simulator's peak points in one sliding minute\n")
	p("and its 403/429 answers, the most requests in flight at once. A re-read is a GET of a URL read\n")
	p("before in the run; one answered in full while nothing changed at GitHub is an ETag cache miss, the\n")
	p("budget an idle target costs once its first reads are paid.\n\n")
	p("| situation | window | requests | points | of which 304 | budget used | re-reads (answered in full) | peak points / min | peak in flight | 403/429 answers | poll plan (daemon's log) | command |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, l := range r.Limits {
		p("| %s | %s | %d | %d | %d | %d | %d (%d) | %d | %d | %s | %s | `%s -only %s` |\n", l.situation(), l.Window.Round(time.Second),
			l.Req.Requests, l.Req.Points, l.Req.NotModified, l.Budget, l.Req.Rereads, l.Req.RereadsCharged, l.PeakPoints, l.PeakInFlight,
			limitedText(l.Limited), orNone(l.Stretch), r.self(), l.part)
	}
	p("\nThe governor holds every minute under its ceiling, so the limits are never reached: when the\n")
	p("targets need more points than the ceiling at their poll_interval, every interval stretches by the\n")
	p("same factor (the plan above; `runner-manager status` shows it) and the first passes are spread over\n")
	p("the stretched interval. A window shorter than that interval sees each target's first, charged\n")
	p("reads, and few or no re-reads. So the 5,000-target budget is measured by a run that lasts until\n")
	p("every repository had a URL read a second time, at the highest ceiling a config may set (900,\n")
	p("GitHub's limit; at 600 that takes well over an hour): between a URL's two reads every other target's\n")
	p("first reads went through the ETag cache, so an undersized cache would have evicted it. Its token\n")
	p("has a budget of 20,000 an hour: the first reads of 5,000 targets cost 15,000, three hours of a\n")
	p("5,000 token's budget, during which nothing else can be read. Budget here is counted at the front:\n")
	p("every answer but a 304 or a limit's refusal.\n\n")
	r.renderGoals(p, "limits")
}

func (l limitsRun) situation() string {
	s := fmt.Sprintf("%d repository targets, idle", l.targets)
	if l.orgRepos > 0 {
		s = fmt.Sprintf("%d repository targets + an organization of %d repositories, idle", l.targets, l.orgRepos)
	}
	if l.ceiling > 0 {
		s += fmt.Sprintf(", governor ceiling %d", l.ceiling)
	}
	if l.budget > 0 {
		s += fmt.Sprintf(", a token of %d budget/h", l.budget)
	}
	if l.untilReread {
		s += ", until every repository was read again"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "not stretched"
	}
	return s
}

// goal is a goal of issue 16 against what this run measured, shown under the figure (section)
// that measures it: "webhook", "limits" or "idle".
type goal struct {
	section                 string
	text, measured, command string
	met                     *bool // nil: not measured in this run
}

func (r results) goals() []goal {
	yes := func(b bool) *bool { return &b }
	cmd := func(part string) string { return fmt.Sprintf("`%s -only %s`", r.self(), part) }
	var gs []goal
	g := goal{section: "webhook", text: "webhook mode, repository target: at most 2 requests and 1.5 budget per job", command: cmd("cost-repo-webhook")}
	if c, ok := r.cost("cost-repo-webhook"); ok {
		rq, b := c.perJob(c.Req.Requests), c.perJob(c.Budget)
		g.measured, g.met = fmt.Sprintf("%.1f requests, %.1f budget per job (%d jobs)", rq, b, c.Jobs), yes(rq <= 2 && b <= 1.5 && len(c.Latencies) == c.Jobs)
	}
	gs = append(gs, g)
	g = goal{section: "webhook", text: "webhook mode, organization of 100 repositories at 100 ms round trips: at most 3 requests per job, p50 under 2 s", command: cmd("cost-org100-webhook")}
	if c, ok := r.cost("cost-org100-webhook"); ok {
		rq, p50 := c.perJob(c.Req.Requests), percentile(c.Latencies, 50)
		g.measured, g.met = fmt.Sprintf("%.1f requests per job, p50 %s (%d of %d jobs ran)", rq, secs(p50), len(c.Latencies), c.Jobs),
			yes(rq <= 3 && p50 < 2*time.Second && len(c.Latencies) == c.Jobs)
	}
	gs = append(gs, g)
	g = goal{section: "limits", text: "1,000 repository targets and an organization of 300 repositories, poll mode: 0 secondary-limit answers in 10 minutes, peak points per minute under the ceiling", command: cmd("limits1000")}
	if l, ok := r.limits("limits1000"); ok {
		g.measured = fmt.Sprintf("%s 403/429 answers in %s; peak %d points/min (ceiling %d, GitHub's limit 900)", limitedText(l.Limited), l.Window.Round(time.Second), l.PeakPoints, governorCeiling)
		g.met = yes(sumLimited(l.Limited) == 0 && l.PeakPoints < governorCeiling && l.Window >= 10*time.Minute && l.orgRepos == 300)
	}
	gs = append(gs, g)
	g = goal{section: "limits", text: "0 budget/h idle up to 5,000 targets", command: cmd("idle5000")}
	if l, ok := r.limits("idle5000"); ok {
		repos := l.targets + l.orgRepos
		if l.Req.RereadRepos < repos {
			g.measured = fmt.Sprintf("not measured: in %s %d of %d repositories were read again (poll plan: %s)", l.Window.Round(time.Second), l.Req.RereadRepos, repos, orNone(l.Stretch))
		} else {
			g.measured = fmt.Sprintf("%d of %d re-reads answered in full (every one of %d repositories read again) in %s, %s 403/429 answers",
				l.Req.RereadsCharged, l.Req.Rereads, repos, l.Window.Round(time.Second), limitedText(l.Limited))
			g.met = yes(l.Req.RereadsCharged == 0 && l.targets >= 5000)
		}
	}
	gs = append(gs, g)
	g = goal{section: "idle", text: "at most 50 MiB RSS and 1% of a core at 1,000 idle targets", command: cmd("idle1000")}
	if s, ok := r.idle(1000); ok && s.Window > 0 {
		share := 100 * s.CPU.Seconds() / s.Window.Seconds()
		g.measured = fmt.Sprintf("RSS max %.1f MiB, %.2f %% of a core over %s", float64(s.RSSMax)/1024, share, s.Window.Round(time.Second))
		g.met = yes(s.RSSMax <= 50*1024 && share <= 1)
	}
	return append(gs, g)
}

// renderGoals writes the goals of section as rows: met or not met with the number, or not measured.
func (r results) renderGoals(p printer, section string) {
	var gs []goal
	for _, g := range r.goals() {
		if g.section == section {
			gs = append(gs, g)
		}
	}
	if len(gs) == 0 {
		return
	}
	p("Goals of issue 16 this figure measures:\n\n| goal | measured | met | command |\n|---|---|---|---|\n")
	for _, g := range gs {
		met, measured := "not measured", g.measured
		if measured == "" {
			measured = "not run"
		}
		if g.met != nil {
			met = map[bool]string{true: "met", false: "**not met**"}[*g.met]
		}
		p("| %s | %s | %s | %s |\n", g.text, measured, met, g.command)
	}
	p("\n")
}

func (r results) cost(part string) (costRun, bool) {
	for _, c := range r.Cost {
		if c.part == part {
			return c, true
		}
	}
	return costRun{}, false
}

func (r results) limits(part string) (limitsRun, bool) {
	for _, l := range r.Limits {
		if l.part == part {
			return l, true
		}
	}
	return limitsRun{}, false
}

func (r results) idle(targets int) (idle, bool) {
	for _, s := range r.Idle {
		if s.Targets == targets {
			return s, true
		}
	}
	return idle{}, false
}
