//go:build e2e

package fleet

import (
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/fleet/etcdtest"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// supplyMonitor samples the simulator's supply of repo every 20 ms (ghsim.Supply: queued jobs,
// connected runners without a job, launches in flight, read under one lock) and keeps the samples
// that over-provision by more than the launches in flight, and the largest over-provisioning seen.
type supplyMonitor struct {
	sim     *harness.Sim
	minIdle int
	stop    chan struct{}
	done    chan struct{}

	mu          sync.Mutex
	samples     int
	worst       ghsim.Supply
	maxInFlight int
	bad         []ghsim.Supply
}

func startSupplyMonitor(t *testing.T, sim *harness.Sim, minIdle int) *supplyMonitor {
	m := &supplyMonitor{sim: sim, minIdle: minIdle, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			s := sim.Supply(repo)
			m.mu.Lock()
			m.samples++
			if m.samples == 1 || s.Over(minIdle) > m.worst.Over(minIdle) {
				m.worst = s
			}
			m.maxInFlight = max(m.maxInFlight, s.Starting)
			if s.Over(minIdle) > s.Starting {
				m.bad = append(m.bad, s)
			}
			m.mu.Unlock()
			select {
			case <-m.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(m.end)
	return m
}

func (m *supplyMonitor) end() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
}

// TestFleetSteadyStreamNeverOverProvisions: three hosts serve a steady stream of jobs with a
// fleet-wide min_idle of 1. At every sample the runners holding no job exceed the queued jobs +
// min_idle by at most the launches in flight (so connected idle runners never exceed demand +
// min_idle: not one warm runner per host), and every registration but the warm pool's ran a job.
func TestFleetSteadyStreamNeverOverProvisions(t *testing.T) {
	const minIdle, jobs = 1, 20
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{repo}})
	etcd := etcdtest.Start(t)
	ds, cs := fleetOf(t, sim, etcd, 3, func(_ int, c *harness.Config) { c.Target(t, "web").MinIdle = minIdle })
	waitJoined(t, ds, 3)
	mon := startSupplyMonitor(t, sim, minIdle)
	var ids []int64
	for range jobs {
		ids = append(ids, sim.MustQueue(t, repo, labels, time.Second))
		// The stream's arrival rate: a job every 300 ms, each running 1 s, keeps several
		// jobs queued or running on the three hosts at once.
		time.Sleep(300 * time.Millisecond)
	}
	sim.WaitJobsDone(t, 3*time.Minute, ids...)
	mon.end()
	if !harness.Poll(time.Minute, func() bool { s := sim.Supply(repo); return s.Idle == minIdle && s.Starting == 0 }) {
		t.Errorf("after the stream the fleet keeps %+v, want %d idle runners fleet-wide (min_idle)", sim.Supply(repo), minIdle)
	}
	var noJob []string
	regs := sim.Registrations()
	for _, r := range regs {
		if r.JobID == 0 {
			noJob = append(noJob, r.Name)
		}
	}
	t.Logf("%d jobs, %d registrations fleet-wide, %d without a job; %d samples, at most %d launches in flight, worst: %+v (over demand + min_idle by %d)",
		jobs, len(regs), len(noJob), mon.samples, mon.maxInFlight, mon.worst, mon.worst.Over(minIdle))
	if len(mon.bad) > 0 {
		t.Errorf("%d of %d samples over-provisioned by more than the launches in flight (min_idle %d), first: %+v",
			len(mon.bad), mon.samples, minIdle, mon.bad[0])
	}
	// Every job ran on its own runner, so the registrations without a job are the warm pool
	// left at the end plus the surplus: runners launched for demand that was gone by the time
	// they connected. The surplus stays within the launches that were in flight at once.
	if surplus := len(noJob) - minIdle; surplus > mon.maxInFlight {
		t.Errorf("%d registrations for %d jobs: %d without a job beyond the warm pool of %d, more than the %d launches in flight at most: %s",
			len(regs), jobs, surplus, minIdle, mon.maxInFlight, strings.Join(noJob, ", "))
	}
	stopAll(t, ds)
	for _, c := range cs {
		harness.AssertNoLeaks(t, sim, c.StateDir)
	}
}

// TestFleetWebhookOnAFollowerWakesTheLeader: GitHub delivers workflow_job events to one follower
// only, and every host polls only every 10 minutes. The follower publishes the delivery
// (wake/<target>), the target's leader reads GitHub at once and publishes its view, and the job
// runs long before any poll would have found it.
func TestFleetWebhookOnAFollowerWakesTheLeader(t *testing.T) {
	const slowPoll = 10 * time.Minute
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{repo}})
	etcd := etcdtest.Start(t)
	urls := make([]string, 3)
	ds, _ := fleetOf(t, sim, etcd, 3, func(i int, c *harness.Config) { urls[i] = c.WithWebhook(t, slowPoll) })
	waitJoined(t, ds, 3)
	// Quiet: the leader's first pass (woken by its election) has published its view, and every host
	// has it; a follower's own first pass, whenever its slot of the 10-minute interval comes, reads
	// the view, not GitHub.
	harness.Eventually(t, time.Minute, "the leader's view on every host", func() bool {
		for _, d := range ds {
			st := d.Status(t)
			if len(st.Fleet.Targets) != 1 || st.Fleet.Targets[0].ViewAt.IsZero() {
				return false
			}
		}
		return true
	})
	var leader string
	for l := range leadersSeen(t, ds) {
		leader = l
	}
	follower := 0
	if hostName(follower) == leader {
		follower = 1
	}
	sim.AddWebhook(urls[follower], harness.WebhookSecret)
	before := sim.DemandReads()
	job := sim.MustQueue(t, repo, labels, time.Second)
	sim.WaitJobsDone(t, time.Minute, job) // a minute: far less than the 10-minute poll
	var queued []ghsim.Delivery
	for _, dl := range sim.Deliveries() {
		if dl.JobID == job && dl.Action == "queued" {
			queued = append(queued, dl)
		}
	}
	if len(queued) != 1 || queued[0].StatusCode != http.StatusAccepted {
		t.Fatalf("the queued delivery of job %d to follower %s was not accepted once: %+v", job, hostName(follower), queued)
	}
	if reads := sim.DemandReads() - before; reads == 0 {
		t.Fatal("the job ran without a demand read at GitHub after the delivery")
	}
	t.Logf("leader %s, delivery to follower %s; job %d ran on %s", leader, hostName(follower), job, sim.MustJob(t, job).RunnerName)
	stopAll(t, ds)
}

// stopAll stops every daemon cleanly and checks each exited 0.
func stopAll(t *testing.T, ds []*harness.Daemon) {
	t.Helper()
	for _, d := range ds {
		d.Signal(syscall.SIGTERM)
	}
	for _, d := range ds {
		if code, _ := d.Wait(t, time.Minute); code != 0 {
			t.Fatalf("daemon exit code %d", code)
		}
	}
}
