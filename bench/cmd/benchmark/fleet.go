package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/bench"
	"github.com/runner-manager/runner-manager/internal/fleet/etcdtest"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// fleetParts are the rows of the fleet figure: hosts sharing one target through one embedded etcd,
// and, for contrast, one host and as many hosts without [fleet] (a fleet of one costs about what
// a lone host does).
var fleetParts = []struct {
	part   string
	hosts  int
	joined bool
}{{"fleet1", 1, true}, {"fleet2", 2, true}, {"fleet3", 3, true}, {"alone1", 1, false}, {"alone3", 3, false}}

// fleetRun is one row: hosts daemons serving repository 1 (min_idle 1) on one simulator, joined
// through an embedded etcd (internal/fleet/etcdtest) or each alone. Requests are counted at the
// simulator's front; demand and inventory reads and supply samples by the simulator itself
// (DemandReads, Supply), the counts the fleet e2e suite asserts on.
type fleetRun struct {
	Part                  string
	Hosts                 int
	Joined                bool
	Poll, Spacing, JobRun time.Duration
	Jobs, MinIdle         int
	Window                time.Duration // first job queued -> last job completed
	Req                   counts
	DemandReads           int
	Samples               int
	Worst                 ghsim.Supply // the sample with the most runners without a job beyond demand + min_idle
	PeakIdleOver          int          // most connected idle runners beyond demand + min_idle in one sample
	IdleOverSamples       int          // samples with connected idle runners beyond demand + min_idle
	IdleAfter             int          // idle runners once the stream is over
	PeakPoints            int          // the most secondary-limit points all hosts spent in one sliding minute at the simulator
	Ceiling               int          // the governor's points_per_minute of each host (the fleet's, joined)
	Left, Killed          int
}

// fleetCeiling is each host's github.points_per_minute (the governor's default).
const fleetCeiling = 600

// fleetSampleEvery is how often the supply is sampled, as in e2e/fleet.
const fleetSampleEvery = 20 * time.Millisecond

func (e env) runFleet(part string, hosts int, joined bool, poll time.Duration, jobs int, spacing, jobRun time.Duration) (fleetRun, error) {
	r := fleetRun{Part: part, Hosts: hosts, Joined: joined, Poll: poll, Spacing: spacing, JobRun: jobRun, Jobs: jobs, MinIdle: 1}
	dir, w, err := e.setup(part, 1)
	if err != nil {
		return r, err
	}
	defer w.close()
	endpoint := ""
	if joined {
		srv, err := etcdtest.Run(filepath.Join(dir, "etcd"))
		if err != nil {
			return r, err
		}
		defer srv.Stop()
		endpoint = srv.Endpoint()
	}
	type host struct {
		d     *daemon
		state string
	}
	var hs []host
	defer func() {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, h := range hs {
			wg.Go(func() {
				_, killed := e.stopAndSweep(h.d, w, h.state)
				mu.Lock()
				r.Killed += killed
				mu.Unlock()
			})
		}
		wg.Wait()
		r.Left = len(w.sim.Runners())
	}()
	for i := range hosts {
		name := fmt.Sprintf("host-%d", i+1)
		hdir := filepath.Join(dir, name)
		if err := os.MkdirAll(hdir, 0o700); err != nil {
			return r, err
		}
		s := bench.Setup{StateDir: filepath.Join(hdir, "state"), APIURL: w.frontURL, TokenFile: w.tokenFile, Targets: 1,
			HostMax: 4, TargetMax: 4, PollInterval: poll, IdleTimeout: 30 * time.Second, MinIdle: r.MinIdle, PointsPerMinute: fleetCeiling}
		if joined {
			s.Fleet.Endpoint, s.Fleet.Name, s.Fleet.Host = endpoint, "bench", name
		}
		d, err := e.startIn(hdir, s, 60*time.Second)
		if err != nil {
			return r, err
		}
		hs = append(hs, host{d, s.StateDir})
	}
	// Warm-up: the warm pool is up (a fleet keeps min_idle between its hosts, lone hosts one each),
	// then one more poll interval so every host's first passes fall before the window.
	warm := r.MinIdle
	if !joined {
		warm *= hosts
	}
	repo := bench.Repo(1)
	if err := waitFor(2*time.Minute, func() bool { s := w.sim.Supply(repo); return s.Idle >= warm && s.Starting == 0 }); err != nil {
		return r, fmt.Errorf("the warm pool of %d runners did not come up: %w", warm, err)
	}
	time.Sleep(poll)

	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(fleetSampleEvery)
		defer tick.Stop()
		for {
			s := w.sim.Supply(repo)
			r.Samples++
			if r.Samples == 1 || s.Over(r.MinIdle) > r.Worst.Over(r.MinIdle) {
				r.Worst = s
			}
			if over := s.Idle - s.Queued - r.MinIdle; over > 0 {
				r.IdleOverSamples++
				r.PeakIdleOver = max(r.PeakIdleOver, over)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	c0, d0, t0 := w.count.snapshot(), w.sim.DemandReads(), time.Now()
	ids, err := w.queueJobs(jobs, "bench", spacing, jobRun, repoOne)
	if err == nil {
		e.log("  %d jobs queued; waiting for them to run", jobs)
		err = waitFor(2*poll+90*time.Second, func() bool { return allJobs(w.sim, ids, done) })
	}
	r.Window, r.Req, r.DemandReads = time.Since(t0), w.count.snapshot().minus(c0), w.sim.DemandReads()-d0
	// The account's busiest minute since the simulator started, warm-up included: every host's
	// requests count against the one account, as at GitHub.
	r.PeakPoints, r.Ceiling = w.sim.PeakPointsPerMinute(), fleetCeiling
	close(stop)
	<-sampled
	if err != nil {
		return r, fmt.Errorf("%d of %d jobs ran: %w", len(latencies(w.sim, ids)), jobs, err)
	}
	// Two more passes of every host, and no launch still in flight: the warm pool they settle on.
	time.Sleep(2 * poll)
	_ = waitFor(30*time.Second, func() bool { return w.sim.Supply(repo).Starting == 0 })
	r.IdleAfter = w.sim.Supply(repo).Idle
	return r, nil
}

func perMinute(n int, window time.Duration) float64 {
	if window <= 0 {
		return 0
	}
	return float64(n) * time.Minute.Seconds() / window.Seconds()
}

func (r results) renderFleet(p printer) {
	if len(r.Fleet) == 0 {
		return
	}
	f0 := r.Fleet[0]
	p("## Fleet: requests and over-provisioning with 1, 2 and 3 hosts\n\n")
	p("Hosts serve one repository target (`min_idle` 1, each host `max_runners` 4, poll_interval %s) on\n", f0.Poll)
	p("one simulator, joined through one embedded etcd (`internal/fleet/etcdtest`, `lease_ttl` 10s) or,\n")
	p("in the last rows, each alone (no `[fleet]`). After the warm pool is up, %d jobs are queued every\n", f0.Jobs)
	p("%s, %s each; the window runs from the first queued to the last completed. REST requests are\n", f0.Spacing, f0.JobRun)
	p("counted at the simulator's front (all hosts); demand and inventory reads (workflow runs, their jobs,\n")
	p("runner lists) and the supply by the simulator itself (`DemandReads`, `Supply`, sampled every %s:\n", fleetSampleEvery)
	p("queued jobs, connected runners without a job, registered runners not yet connected), the counts\n")
	p("e2e/fleet asserts on. The peak points are the account's busiest sliding minute at the simulator\n")
	p("(GET 1, other methods 5; all hosts, warm-up included) against each host's `points_per_minute` of\n")
	p("%d: joined, the hosts share that one ceiling (docs/fleet.md); alone, each has it whole.\n\n", f0.Ceiling)
	p("| hosts | `[fleet]` | window | REST requests / min | demand and inventory reads / min | JIT registrations per job | peak runners without a job beyond demand + `min_idle` (sample) | samples with connected idle runners beyond demand + `min_idle` | idle runners two poll intervals after the stream | registrations left after stop | peak points / min at the simulator, all hosts | command |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range r.Fleet {
		joined := "joined"
		if !f.Joined {
			joined = "none"
		}
		p("| %d | %s | %s | %.1f | %.1f | %.2f | %d (%d queued, %d idle, %d launches in flight) | %d of %d (peak %d) | %d | %d | %d of %d | `%s -only %s` |\n",
			f.Hosts, joined, f.Window.Round(time.Second), perMinute(f.Req.Requests, f.Window), perMinute(f.DemandReads, f.Window),
			float64(f.Req.ByKind["POST generate-jitconfig"])/float64(max(f.Jobs, 1)), max(f.Worst.Over(f.MinIdle), 0),
			f.Worst.Queued, f.Worst.Idle, f.Worst.Starting, f.IdleOverSamples, f.Samples, f.PeakIdleOver, f.IdleAfter, f.Left, f.PeakPoints, f.Ceiling, r.self(), f.Part)
	}
	p("\nIn a fleet one elected host per target reads GitHub and publishes what it read; the others read it\n")
	p("from etcd, so demand and inventory reads stay one host's however many hosts there are, while JIT\n")
	p("registrations and deletions stay one per runner. Launches are claimed in etcd transactions against\n")
	p("every host's published supply, so runners without a job exceed demand + `min_idle` only by\n")
	p("launches still in flight, and `min_idle` is the fleet's: one warm runner between the hosts. Hosts\n")
	p("without `[fleet]` each read GitHub, each cover the whole demand and each keep their own warm\n")
	p("runner. The per-minute rates are those of a job every %s.\n\n", f0.Spacing)
	p("The stream needs well under the ceiling, so the peak points show what the hosts spend together\n")
	p("(a fleet of three about what one host does), not the shared ceiling at work: with demand over it,\n")
	p("e2e/fleet `TestFleetSharesOneGitHubCeiling` (three hosts at `points_per_minute` 120, a burst of 30\n")
	p("jobs: 150 points of registrations alone) asserts the fleet's busiest minute at the simulator\n")
	p("stays within 120; in degraded mode each host has the whole ceiling.\n\n")
	p("A fleet's leader lists runners by a lone host's rules (after a launch or an exit, while a runner\n")
	p("starts, every 5th pass otherwise) and for the hosts that wait for a list, not on every pass. As\n")
	p("on a lone host, a runner's end is concluded by a light pass at the next exit check, which reads\n")
	p("nothing from GitHub and refills the fleet's warm pool (claimed through the fleet), so polls find\n")
	p("no job waiting and GitHub answers the queued list with a 304. A fleet's light pass launches for\n")
	p("`min_idle` only, not for jobs its last view listed (the runner that ended may have run one):\n")
	p("once jobs wait for a runner (the warm one came up after the next job), only a poll launches for\n")
	p("them and reads the runs and their jobs in full, while a lone host's light pass launches for the\n")
	p("jobs its last poll saw. Which way a run goes depends on the phase of the 2 s exit check against\n")
	p("the jobs: runs of the same row read from about a lone host's rate to five times it.\n\n")
	for _, f := range r.Fleet {
		if f.Killed > 0 {
			p("Note: after the %s run the daemons left %d runner processes alive; the benchmark killed them.\n\n", f.Part, f.Killed)
		}
	}
}
