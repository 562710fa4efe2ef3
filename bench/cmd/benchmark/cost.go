package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/bench"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/status"
)

// Issue 16's figures: what one job costs a repository target and an organization target at a
// distant GitHub's round trip, and whether many idle targets stay inside GitHub's secondary limits.
// Every simulator here enforces GitHub's limits (ghsim.Limits at their defaults: 900 points a
// minute, 100 requests in flight) and the daemon's governor runs at its default ceiling.

// costLatency is the round trip the cost runs give the simulator (ghsim.Options.Latency).
const costLatency = 100 * time.Millisecond

// governorCeiling is the governor's default points_per_minute (internal/github.GovernorOptions),
// which no generated config overrides.
const governorCeiling = 600

// costPart is one cost run: a repository target (repos 0) or an organization target of repos
// repositories, in webhook or poll mode.
type costPart struct {
	part  string
	repos int
	mode  string
}

var costParts = []costPart{
	{"cost-repo-webhook", 0, "webhook"}, {"cost-org100-webhook", 100, "webhook"}, {"cost-org300-webhook", 300, "webhook"},
	{"cost-repo-poll", 0, "poll"}, {"cost-org100-poll", 100, "poll"}, {"cost-org300-poll", 300, "poll"},
}

// target says what the run's one target is.
func (c costPart) target() string {
	if c.repos == 0 {
		return "repository"
	}
	return fmt.Sprintf("organization of %d repositories", c.repos)
}

// costRun is one cost part's measurement. Window runs from the first job queued to the last job
// completed; the simulator's figures (peak points, limit answers) cover the whole run, the first
// pass included.
type costRun struct {
	costPart
	Poll            time.Duration
	Latency         time.Duration
	Jobs            int
	Spacing, JobRun time.Duration
	FirstPass       time.Duration // daemon ready -> the target's first pass ended (status last_pass)
	Latencies       []time.Duration
	Window          time.Duration
	Req             counts
	Budget          int
	PeakPoints      int            // the simulator's most points in one sliding minute
	PeakInFlight    int            // the most requests in flight at once, at the counting front
	Limited         map[string]int // the simulator's 403/429 answers by limit
	Left, Killed    int
}

func (c costRun) perJob(n int) float64 { return float64(n) / float64(max(c.Jobs, 1)) }

func sumLimited(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func limitedText(m map[string]int) string {
	if sumLimited(m) == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return fmt.Sprintf("%d (%s)", sumLimited(m), strings.Join(parts, ", "))
}

// jobRepo spreads an organization's jobs over its repositories (a step prime to 100 and 300, so
// jobs land in distinct repositories); a repository target's all go to its repository.
func (c costPart) jobRepo(i int) string {
	if c.repos == 0 {
		return bench.Repo(1)
	}
	return bench.Repo(1 + (i*37)%c.repos)
}

func (e env) runCost(c costPart, poll time.Duration, jobs int, spacing, jobRun time.Duration) (costRun, error) {
	r := costRun{costPart: c, Poll: poll, Latency: costLatency, Jobs: jobs, Spacing: spacing, JobRun: jobRun}
	if c.mode == "webhook" {
		r.Poll = 10 * time.Minute
	}
	repos := max(c.repos, 1)
	dir, w, err := e.setupWith(c.part, repos, ghsim.Options{Latency: costLatency})
	if err != nil {
		return r, err
	}
	defer w.close()
	s := bench.Setup{StateDir: filepath.Join(dir, "state"), APIURL: w.frontURL, TokenFile: w.tokenFile,
		HostMax: jobs, TargetMax: jobs, PollInterval: r.Poll, IdleTimeout: 30 * time.Second}
	if c.repos == 0 {
		s.Targets = 1
	} else {
		s.Orgs = []string{bench.Org}
	}
	d, err := e.startWith(dir, w, s, c.mode == "webhook")
	if err != nil {
		return r, err
	}
	defer func() { r.Left, r.Killed = e.stopAndSweep(d, w, s.StateDir) }()
	// The first pass reads every repository (queued and in-progress runs: nothing is known of them
	// yet); at the governor's ceiling an organization of 300 takes about a minute of points. The
	// window opens once status says the pass ended: counting requests until the queued runs alone
	// were read opened it while the in-progress reads still queued in the governor, so the window
	// counted them and jobs waited behind them.
	t0 := time.Now()
	if err := waitFor(3*time.Minute, func() bool { return firstPassDone(s.StateDir) }); err != nil {
		return r, fmt.Errorf("the daemon made no first pass over %d repositories: %w", repos, err)
	}
	r.FirstPass = time.Since(t0)
	time.Sleep(2 * time.Second) // the first pass's runner-list and download reads are not the jobs'
	c0, b0, q0 := w.count.snapshot(), w.budgetUsed(), time.Now()
	ids, err := w.queueJobs(jobs, "bench", spacing, jobRun, c.jobRepo)
	if err != nil {
		return r, err
	}
	e.log("  %s: %d jobs queued; waiting for them to run", c.part, jobs)
	deadline := 90 * time.Second
	if c.mode == "poll" {
		// A quiet repository is read every idle_poll_interval (4 x poll_interval) of the stretched
		// plan: for an organization of 300 that is minutes.
		deadline = 12 * time.Minute
	}
	err = waitFor(deadline, func() bool { return allJobs(w.sim, ids, done) })
	r.Latencies = latencies(w.sim, ids)
	r.Window, r.Req, r.Budget = time.Since(q0), w.count.snapshot().minus(c0), w.budgetUsed()-b0
	r.PeakPoints, r.PeakInFlight, r.Limited = w.sim.PeakPointsPerMinute(), w.count.peak(), w.sim.LimitAnswers()
	if err != nil {
		return r, fmt.Errorf("%d of %d jobs ran within %s: %w", len(r.Latencies), jobs, deadline, err)
	}
	return r, nil
}

// limitsPart is an idle run at scale: targets repository targets, and an organization target of
// orgRepos repositories of a second organization when orgRepos > 0, on one account. A part with
// untilReread runs until every target's repository has had a URL read a second time (so each
// URL's ETag entry was put to use after every other target's first reads), with the governor at
// ceiling (0: its default).
type limitsPart struct {
	part        string
	targets     int
	orgRepos    int
	ceiling     int
	untilReread bool
	budget      int // the token's primary budget an hour (ghsim.Options.RateLimit; 0: GitHub's 5,000)
}

// idle5000 runs at GitHub's own limit, the highest ceiling a config may set: at the default 600
// the stretched interval is 35 minutes, so every target's second read would take well over an
// hour (a target's slots are on a grid of its interval, so its second read comes up to two
// intervals after its first). Its token has a primary budget of 20,000 an hour: the first reads of
// 5,000 targets cost 15,000, three hours of a 5,000 token's budget (a run on one showed 85 targets
// re-read in an hour), and the figure is what the reads after them cost.
var limitsParts = []limitsPart{{part: "limits1000", targets: 1000, orgRepos: 300}, {part: "limits5000", targets: 5000},
	{part: "idle5000", targets: 5000, ceiling: 900, untilReread: true, budget: 20000}}

// limitsOrg owns the organization target's repositories in a limits run.
const limitsOrg = "big"

type limitsRun struct {
	limitsPart
	Poll         time.Duration
	Window       time.Duration // from the daemon's ready line
	ReadyIn      time.Duration
	Req          counts
	Budget       int
	PeakPoints   int
	PeakInFlight int
	Limited      map[string]int
	Stretch      string // the daemon's last "poll intervals stretched" detail
}

// governorAt is the ceiling the part's daemon runs at.
func (l limitsPart) governorAt() int {
	if l.ceiling > 0 {
		return l.ceiling
	}
	return governorCeiling
}

// runLimits runs l's daemon for window, or for an untilReread part until every target was re-read
// (at most window).
func (e env) runLimits(l limitsPart, poll, window time.Duration) (limitsRun, error) {
	r := limitsRun{limitsPart: l, Poll: poll, Window: window}
	dir, w, err := e.setupWith(l.part, l.targets, ghsim.Options{RateLimit: l.budget})
	if err != nil {
		return r, err
	}
	defer w.close()
	for i := 1; i <= l.orgRepos; i++ {
		w.sim.CreateRepo(limitsOrg, fmt.Sprintf("r%04d", i))
	}
	s := bench.Setup{StateDir: filepath.Join(dir, "state"), APIURL: w.frontURL, TokenFile: w.tokenFile, Targets: l.targets,
		HostMax: min(l.targets, 1000), TargetMax: 1, PollInterval: poll, PointsPerMinute: l.ceiling}
	if l.orgRepos > 0 {
		s.Orgs = []string{limitsOrg}
	}
	d, err := e.startIn(dir, s, 2*time.Minute)
	if err != nil {
		return r, err
	}
	defer e.stopAndSweep(d, w, s.StateDir)
	r.ReadyIn = d.Ready
	t0 := time.Now()
	var waitErr error
	if l.untilReread {
		waitErr = waitFor(window, func() bool { return w.count.snapshot().RereadRepos >= l.targets+l.orgRepos })
		if waitErr != nil {
			waitErr = fmt.Errorf("%d of %d repositories re-read within %s: %w", w.count.snapshot().RereadRepos, l.targets+l.orgRepos, window, waitErr)
		}
	} else {
		time.Sleep(window)
	}
	r.Window = time.Since(t0)
	// The budget is counted at the front (every answer but a 304 and a limit's refusal is charged),
	// not read from the simulator, whose count restarts every hour.
	r.Req = w.count.snapshot()
	r.Budget = r.Req.Requests - r.Req.NotModified - sumLimited(w.sim.LimitAnswers())
	r.PeakPoints, r.PeakInFlight, r.Limited = w.sim.PeakPointsPerMinute(), w.count.peak(), w.sim.LimitAnswers()
	r.Stretch, err = stretchLogged(filepath.Join(dir, "daemon.log"))
	return r, errors.Join(waitErr, err)
}

// stretchLogged is the detail of the last "poll intervals stretched" warning in a JSON daemon log.
func stretchLogged(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	detail := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), "poll intervals stretched") {
			continue
		}
		var line struct{ Detail string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Detail != "" {
			detail = line.Detail
		}
	}
	return detail, sc.Err()
}

// scaleParts runs the selected cost and limits parts: webhook cost runs one at a time (their
// latencies are the figure), then the poll-mode cost runs and the limits runs all at once, each on
// its own simulator and account, since their figures are counts and waits of minutes.
func scaleParts(o options, parts map[string]bool, e env, r *results, fail func(string, error)) {
	for _, c := range costParts {
		if c.mode != "webhook" || !parts[c.part] {
			continue
		}
		e.log("%s: %s target, webhook mode, %d jobs every %s, round trip %s", c.part, c.target(), o.costJobs, o.costSpacing, costLatency)
		run, err := e.runCost(c, o.poll, o.costJobs, o.costSpacing, o.jobRun)
		if err != nil {
			fail(c.part, err)
		}
		r.Cost = append(r.Cost, run)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range costParts {
		if c.mode != "poll" || !parts[c.part] {
			continue
		}
		e.log("%s: %s target, poll mode (poll_interval %s), %d jobs every %s, round trip %s", c.part, c.target(), o.poll, o.costJobs, o.costSpacing, costLatency)
		wg.Go(func() {
			run, err := e.runCost(c, o.poll, o.costJobs, o.costSpacing, o.jobRun)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fail(c.part, err)
			}
			r.Cost = append(r.Cost, run)
		})
	}
	for _, l := range limitsParts {
		if !parts[l.part] {
			continue
		}
		window := o.limitsWindow
		if l.untilReread {
			window = o.rereadWindow
		}
		e.log("%s: %d idle repository targets (+ an organization of %d), poll_interval %s, ceiling %d, for %s", l.part, l.targets, l.orgRepos, o.poll, l.governorAt(), window)
		wg.Go(func() {
			run, err := e.runLimits(l, o.poll, window)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fail(l.part, err)
			}
			r.Limits = append(r.Limits, run)
		})
	}
	wg.Wait()
	sortCost(r.Cost)
	sortLimits(r.Limits)
}

func sortCost(runs []costRun) {
	order := map[string]int{}
	for i, c := range costParts {
		order[c.part] = i
	}
	slices.SortStableFunc(runs, func(a, b costRun) int { return order[a.part] - order[b.part] })
}

func sortLimits(runs []limitsRun) {
	order := map[string]int{}
	for i, l := range limitsParts {
		order[l.part] = i
	}
	slices.SortStableFunc(runs, func(a, b limitsRun) int { return order[a.part] - order[b.part] })
}

// firstPassDone reports whether the daemon's status shows a pass of every target ended.
func firstPassDone(stateDir string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	snap, err := status.Fetch(ctx, status.SocketPath(stateDir))
	if err != nil || len(snap.Targets) == 0 {
		return false
	}
	for _, t := range snap.Targets {
		if t.LastPass.IsZero() {
			return false
		}
	}
	return true
}
