package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/bench"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// scaleSetRun is the scale-set figure: one scale-set target, idle and then under load. REST
// requests are counted at the simulator's front as for the other figures; Actions-service calls
// by the simulator itself (ActionsCalls), on its own port.
type scaleSetRun struct {
	Jobs             int
	Spacing, JobRun  time.Duration
	LongPoll         time.Duration
	Latencies        []time.Duration
	Window           time.Duration // first job queued -> last job completed
	Req              counts        // REST, in Window
	Calls            map[string]int
	Idle             time.Duration
	IdleReq          counts
	IdleCalls        map[string]int
	Chain            counts // REST requests of the token chain at start (one admin token)
	Left             int
	SessionAfterStop string
}

func diffCalls(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if n := v - before[k]; n != 0 {
			out[k] = n
		}
	}
	return out
}

func sumCalls(c map[string]int) int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// runScaleSet measures one scale-set target on a simulator whose long poll lasts as GitHub's
// (about 50 s): an idle window first, then jobs queued every spacing, after one warm-up job that
// fills the runner-package cache (resolved once an hour, so not a per-job cost).
func (e env) runScaleSet(jobs int, spacing, jobRun, idleWindow time.Duration) (scaleSetRun, error) {
	r := scaleSetRun{Jobs: jobs, Spacing: spacing, JobRun: jobRun, LongPoll: 50 * time.Second}
	dir, w, err := e.setupWith("scaleset", 1, ghsim.Options{Actions: ghsim.ActionsOptions{LongPoll: r.LongPoll}})
	if err != nil {
		return r, err
	}
	defer w.close()
	s := bench.Setup{StateDir: filepath.Join(dir, "state"), APIURL: w.frontURL, TokenFile: w.tokenFile, Targets: 1,
		HostMax: jobs, TargetMax: jobs, PollInterval: 30 * time.Second, IdleTimeout: 30 * time.Second, ScaleSet: "bench-set"}
	d, err := e.startIn(dir, s, 60*time.Second)
	if err != nil {
		return r, err
	}
	defer func() {
		r.Left, _ = e.stopAndSweep(d, w, s.StateDir)
		if sets := w.sim.ScaleSets(); len(sets) == 1 {
			r.SessionAfterStop = sets[0].Session
		}
	}()
	session := func() bool { sets := w.sim.ScaleSets(); return len(sets) == 1 && sets[0].Session != "" }
	if err := waitFor(30*time.Second, session); err != nil {
		return r, fmt.Errorf("the daemon opened no session: %w", err)
	}
	r.Chain = w.count.snapshot()
	warm, err := w.sim.QueueJob(bench.Repo(1), []string{s.ScaleSet}, jobRun)
	if err != nil {
		return r, err
	}
	if err := waitFor(90*time.Second, func() bool { return allJobs(w.sim, []int64{warm}, done) }); err != nil {
		return r, fmt.Errorf("the warm-up job did not run: %w", err)
	}
	time.Sleep(3 * time.Second) // its runner concluded, the next long poll under way

	c0, a0, t0 := w.count.snapshot(), w.sim.ActionsCalls(), time.Now()
	time.Sleep(idleWindow)
	r.Idle, r.IdleReq, r.IdleCalls = time.Since(t0), w.count.snapshot().minus(c0), diffCalls(w.sim.ActionsCalls(), a0)

	c0, a0, t0 = w.count.snapshot(), w.sim.ActionsCalls(), time.Now()
	ids, err := w.queueJobs(jobs, s.ScaleSet, spacing, jobRun, repoOne)
	if err != nil {
		return r, err
	}
	e.log("  %d jobs queued for the scale set; waiting for them to run", jobs)
	err = waitFor(90*time.Second, func() bool { return allJobs(w.sim, ids, done) })
	r.Latencies = latencies(w.sim, ids)
	if err != nil {
		return r, fmt.Errorf("%d of %d scale-set jobs ran within 90 s: %w", len(r.Latencies), jobs, err)
	}
	// Each job's runner is concluded after its job: wait for the last ones before counting.
	_ = waitFor(30*time.Second, func() bool { return len(w.sim.Runners()) == 0 })
	r.Window, r.Req, r.Calls = time.Since(t0), w.count.snapshot().minus(c0), diffCalls(w.sim.ActionsCalls(), a0)
	return r, nil
}

func (r results) renderScaleSet(p printer) {
	s := *r.ScaleSet
	cmd := "`" + r.self() + " -only scaleset`"
	perJob := func(n int) float64 { return float64(n) / float64(max(s.Jobs, 1)) }
	p("## Scale-set demand\n\n")
	p("One repository target with `scale_set` (`max_runners` = jobs), on a simulator whose long poll lasts\n")
	p("%s, as GitHub's does. REST requests are counted at the simulator's REST front as above;\n", s.LongPoll)
	p("Actions-service calls (the message queue, sessions, scale-set JIT) by the simulator's own count on\n")
	p("its second port. One warm-up job runs first (it fills the runner-package cache, which is resolved\n")
	p("once an hour), then an idle window, then %d jobs every %s, %s each.\n\n", s.Jobs, s.Spacing, s.JobRun)
	p("| figure | goal | measured | command |\n|---|---|---|---|\n")
	p("| job queued -> running, p50 | at most 1 s | %s (p95 %s, max %s, %d jobs) | %s |\n", secs(percentile(s.Latencies, 50)),
		secs(percentile(s.Latencies, 95)), secs(percentile(s.Latencies, 100)), len(s.Latencies), cmd)
	p("| REST requests per job | 0 | %.2f (%d in %s%s) | %s |\n", perJob(s.Req.Requests), s.Req.Requests, s.Window.Round(time.Second), colonKinds(s.Req), cmd)
	p("| Actions-service calls per job | the JIT call and the acknowledgement (plus acquire on GHES) | %.2f (%s) | %s |\n",
		perJob(sumCalls(s.Calls)), perJobRoutes(s.Calls, s.Jobs), cmd)
	p("| REST requests per idle hour | 0 beyond token renewals | %.1f (%d in %s%s) | %s |\n", perHour(s.IdleReq.Requests, s.Idle, 1), s.IdleReq.Requests, s.Idle.Round(time.Second), colonKinds(s.IdleReq), cmd)
	p("| Actions-service calls per idle hour | | %.1f (%s in %s) | %s |\n", perHour(sumCalls(s.IdleCalls), s.Idle, 1), routes(s.IdleCalls), s.Idle.Round(time.Second), cmd)
	p("| REST requests per token renewal | | %d (%s, at start) | %s |\n", s.Chain.Requests, kinds(s.Chain), cmd)
	p("| registrations left, session after stop | 0, none | %d, %q | %s |\n\n", s.Left, s.SessionAfterStop, cmd)
	p("The message GET is a long poll: it is answered as soon as GitHub assigns a job, so latency does not\n")
	p("depend on an interval. A job costs its runner's JIT call, the acknowledgement of each message that\n")
	p("told of it (assigned, started, completed: several events may share one message), the long polls\n")
	p("those messages ended (one GET each), and the DELETE of a runner whose process ended before its\n")
	p("JobCompleted arrived (a runner the queue saw complete was removed by GitHub, and is not deleted).\n")
	p("The admin token is renewed a minute before its `exp` (an hour on the simulator): each renewal costs\n")
	p("the REST requests of the token-renewal row, so an idle scale-set target costs that many REST\n")
	p("requests an hour and nothing else, whatever the number of repositories the set serves.\n\n")
}

func colonKinds(c counts) string {
	if c.Requests == 0 {
		return ""
	}
	return ": " + kinds(c)
}

// routes renders calls by route, most first.
func routes(c map[string]int) string {
	keys := slices.Sorted(maps.Keys(c))
	slices.SortStableFunc(keys, func(a, b string) int { return c[b] - c[a] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func perJobRoutes(c map[string]int, jobs int) string {
	keys := slices.Sorted(maps.Keys(c))
	slices.SortStableFunc(keys, func(a, b string) int { return c[b] - c[a] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(c[k])/float64(max(jobs, 1))))
	}
	return strings.Join(parts, ", ")
}
