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
	Phase                 time.Duration // from the end of a poll to the first job queued
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

// fleetStream is the job stream of every fleet row: jobs queued spacing apart, from phase after a
// poll (the same in every row: a job queued just before a poll is read in full by it, one taken
// by the warm runner before it is not, so rows compare only at one phase), each running jobRun.
type fleetStream struct {
	poll, spacing, jobRun, phase time.Duration
	jobs                         int
}

func (e env) runFleet(part string, hosts int, joined bool, st fleetStream) (fleetRun, error) {
	poll, jobs := st.poll, st.jobs
	r := fleetRun{Part: part, Hosts: hosts, Joined: joined, Poll: poll, Spacing: st.spacing, JobRun: st.jobRun, Phase: st.phase, Jobs: jobs, MinIdle: 1}
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
	// The stream starts at the same phase against the polls in every row: a poll reads a repository
	// demand at a slot of the pacer (the same for the one target whatever the hosts), after which
	// nothing reads it until the next one (the warm pool is idle).
	reads := w.sim.DemandReads()
	if err := waitFor(2*poll, func() bool { return w.sim.DemandReads() != reads }); err != nil {
		return r, fmt.Errorf("no poll within two poll intervals of the warm-up: %w", err)
	}
	time.Sleep(st.phase)

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
	ids, err := w.queueJobs(jobs, "bench", st.spacing, st.jobRun, repoOne)
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
	f0 := r.Fleet[0]
	p("## Fleet: requests and over-provisioning with 1, 2 and 3 hosts\n\n")
	p("Hosts serve one repository target (`min_idle` 1, each host `max_runners` 4, poll_interval %s) on\n", f0.Poll)
	p("one simulator, joined through one embedded etcd (`internal/fleet/etcdtest`, `lease_ttl` 10s) or,\n")
	p("in the last rows, each alone (no `[fleet]`). After the warm pool is up, %d jobs are queued every\n", f0.Jobs)
	p("%s, %s each, the first a fixed time after a poll (`-fleet-phase`, a column: whether a job waits\n", f0.Spacing, f0.JobRun)
	p("when a poll comes, which the poll then reads in full, depends on that phase, for any number of\n")
	p("hosts, so rows compare at one phase); the window runs from the first queued to the last\n")
	p("completed. REST requests are\n")
	p("counted at the simulator's front (all hosts); demand and inventory reads (workflow runs, their jobs,\n")
	p("runner lists) and the supply by the simulator itself (`DemandReads`, `Supply`, sampled every %s:\n", fleetSampleEvery)
	p("queued jobs, connected runners without a job, registered runners not yet connected), the counts\n")
	p("e2e/fleet asserts on. The peak points are the account's busiest sliding minute at the simulator\n")
	p("(GET 1, other methods 5; all hosts, warm-up included) against each host's `points_per_minute` of\n")
	p("%d: joined, the hosts share that one ceiling (docs/fleet.md); alone, each has it whole.\n\n", f0.Ceiling)
	p("| hosts | `[fleet]` | first job after a poll | window | REST requests / min | demand and inventory reads / min | JIT registrations per job | peak runners without a job beyond demand + `min_idle` (sample) | samples with connected idle runners beyond demand + `min_idle` | idle runners two poll intervals after the stream | registrations left after stop | peak points / min at the simulator, all hosts | command |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range r.Fleet {
		joined := "joined"
		if !f.Joined {
			joined = "none"
		}
		p("| %d | %s | %s | %s | %.1f | %.1f | %.2f | %d (%d queued, %d idle, %d launches in flight) | %d of %d (peak %d) | %d | %d | %d of %d | `%s -only %s -fleet-phase %s` |\n",
			f.Hosts, joined, f.Phase, f.Window.Round(time.Second), perMinute(f.Req.Requests, f.Window), perMinute(f.DemandReads, f.Window),
			float64(f.Req.ByKind["POST generate-jitconfig"])/float64(max(f.Jobs, 1)), max(f.Worst.Over(f.MinIdle), 0),
			f.Worst.Queued, f.Worst.Idle, f.Worst.Starting, f.IdleOverSamples, f.Samples, f.PeakIdleOver, f.IdleAfter, f.Left, f.PeakPoints, f.Ceiling, r.self(), f.Part, f.Phase)
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
	p("nothing from GitHub: it plans on the fleet's current view, refills the warm pool and launches\n")
	p("for the view's queued jobs that no host covers (claimed through the fleet; a runner that took a\n")
	p("job the view has not seen covers one of its jobs), as a lone host's light pass launches for the\n")
	p("jobs its last poll saw. Polls then find no job waiting and GitHub answers the queued list with a\n")
	p("304, so at one phase a fleet of one, two or three reads demand about as often as one lone\n")
	p("host, or less: the polls that find a job waiting are what the reads count.\n\n")
	for _, f := range r.Fleet {
		noteKilled(p, f.Part, "daemons", f.Killed)
	}
}
