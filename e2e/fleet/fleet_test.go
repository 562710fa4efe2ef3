//go:build e2e

package fleet

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/fleet/etcdtest"
)

const (
	jitRoute = "POST /repos/{owner}/{repo}/actions/runners/generate-jitconfig"
	repo     = "acme/web"
)

var labels = []string{"e2e"}

// fleetOf starts n daemons sharing target web (max_runners 4 each) through etcd, lease_ttl 3s;
// each edit changes host i's config (host-<i+1>) before it starts.
func fleetOf(t *testing.T, sim *harness.Sim, etcd *etcdtest.Server, n int, edits ...func(i int, c *harness.Config)) ([]*harness.Daemon, []*harness.Config) {
	t.Helper()
	var ds []*harness.Daemon
	var cs []*harness.Config
	for i := range n {
		c := harness.NewConfig(t, sim).Add(harness.RepoTarget("web", repo, labels, 4))
		c.File.Fleet = &config.Fleet{EtcdEndpoints: []string{etcd.Endpoint()}, Name: "e2e",
			HostName: hostName(i), LeaseTTL: harness.Duration(3 * time.Second)}
		for _, edit := range edits {
			edit(i, c)
		}
		ds = append(ds, harness.StartDaemon(t, c.Write(t)))
		cs = append(cs, c)
	}
	return ds, cs
}

func hostName(i int) string { return fmt.Sprintf("host-%d", i+1) }

// leadersSeen samples every live daemon's status and returns the leaders they name for web.
func leadersSeen(t *testing.T, ds []*harness.Daemon) map[string]bool {
	seen := map[string]bool{}
	for _, d := range ds {
		if d.Exited() {
			continue
		}
		st := d.Status(t)
		if st.Fleet == nil {
			t.Fatal("a fleet daemon's status has no fleet section")
		}
		for _, tg := range st.Fleet.Targets {
			if tg.Name == "web" && tg.Leader != "" && st.Fleet.Joined {
				seen[tg.Leader] = true
			}
		}
	}
	return seen
}

func waitJoined(t *testing.T, ds []*harness.Daemon, hosts int) {
	t.Helper()
	harness.Eventually(t, time.Minute, fmt.Sprintf("%d hosts joined with one leader", hosts), func() bool {
		for _, d := range ds {
			if d.Exited() {
				continue
			}
			st := d.Status(t)
			if st.Fleet == nil || !st.Fleet.Joined || len(st.Fleet.Hosts) != hosts {
				return false
			}
		}
		return len(leadersSeen(t, ds)) == 1
	})
}

// killLeader kills -9 the host leading web and waits for the others to form a fleet again.
func killLeader(t *testing.T, ds []*harness.Daemon) (string, []*harness.Daemon) {
	t.Helper()
	var leader string
	for l := range leadersSeen(t, ds) {
		leader = l
	}
	var rest []*harness.Daemon
	for i, d := range ds {
		if hostName(i) == leader {
			d.Kill9()
			continue
		}
		rest = append(rest, d)
	}
	waitJoined(t, rest, len(rest))
	return leader, rest
}

// TestFleetBurstLaunchesOncePerJob: a burst of 10 jobs served by three hosts makes at most 10
// JIT registrations fleet-wide (not 30), every job runs, and one leader is seen throughout.
func TestFleetBurstLaunchesOncePerJob(t *testing.T) {
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{repo}})
	etcd := etcdtest.Start(t)
	ds, cs := fleetOf(t, sim, etcd, 3)
	waitJoined(t, ds, 3)
	before := sim.Requests()[jitRoute]
	var jobs []int64
	for range 10 {
		jobs = append(jobs, sim.MustQueue(t, repo, labels, 3*time.Second))
	}
	stop := make(chan struct{})
	multi := make(chan string, 1)
	go func() {
		for {
			select {
			case <-stop:
				close(multi)
				return
			case <-time.After(200 * time.Millisecond):
			}
			if seen := leadersSeen(t, ds); len(seen) > 1 {
				select {
				case multi <- fmt.Sprint(seen):
				default:
				}
			}
		}
	}()
	sim.WaitJobsDone(t, 3*time.Minute, jobs...)
	close(stop)
	if m, ok := <-multi; ok && m != "" {
		t.Errorf("more than one leader of target web observed at once: %s", m)
	}
	if got := sim.Requests()[jitRoute] - before; got > 10 {
		t.Fatalf("10 queued jobs made %d generate-jitconfig calls fleet-wide, want at most 10", got)
	}
	stopAll(t, ds)
	for _, c := range cs {
		harness.AssertNoLeaks(t, sim, c.StateDir)
	}
}

// TestFleetSurvivesTheLeaderAndEtcd: kill -9 of the leader moves the leadership and every job still
// runs; etcd stopped for 3 TTLs and restarted loses no job and the hosts rejoin.
func TestFleetSurvivesTheLeaderAndEtcd(t *testing.T) {
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{repo}})
	etcd := etcdtest.Start(t)
	ds, _ := fleetOf(t, sim, etcd, 3)
	waitJoined(t, ds, 3)
	leader, rest := killLeader(t, ds)
	if seen := leadersSeen(t, rest); seen[leader] {
		t.Fatalf("the killed host %s still leads", leader)
	}
	var jobs []int64
	for range 4 {
		jobs = append(jobs, sim.MustQueue(t, repo, labels, time.Second))
	}
	sim.WaitJobsDone(t, 2*time.Minute, jobs...)

	etcd.Stop()
	stopped := time.Now()
	harness.Eventually(t, time.Minute, "both hosts to serve alone", func() bool {
		for _, d := range rest {
			if st := d.Status(t); st.Fleet == nil || st.Fleet.Joined {
				return false
			}
		}
		return true
	})
	var during []int64
	for range 3 {
		during = append(during, sim.MustQueue(t, repo, labels, time.Second))
	}
	sim.WaitJobsDone(t, 2*time.Minute, during...)
	// The scenario's outage lasts 3 x lease_ttl (the jobs above ran inside it): a duration the
	// scenario sets, not a wait for a condition.
	time.Sleep(time.Until(stopped.Add(9 * time.Second)))
	etcd.Start()
	waitJoined(t, rest, 2)
	after := sim.MustQueue(t, repo, labels, time.Second)
	sim.WaitJobsDone(t, 2*time.Minute, after)
}

// readsOver runs n hosts on a fresh simulator with two jobs queued now and then, and returns the
// demand and inventory reads the simulator answered in window once the fleet has formed.
func readsOver(t *testing.T, n int, window time.Duration) int {
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{repo}})
	etcd := etcdtest.Start(t)
	ds, _ := fleetOf(t, sim, etcd, n)
	waitJoined(t, ds, n)
	before := sim.DemandReads()
	end := time.Now().Add(window)
	var jobs []int64
	for time.Now().Before(end) {
		jobs = append(jobs, sim.MustQueue(t, repo, labels, time.Second))
		sim.WaitJobsDone(t, time.Minute, jobs[len(jobs)-1])
	}
	reads := sim.DemandReads() - before
	for _, d := range ds {
		d.Signal(syscall.SIGTERM)
	}
	for _, d := range ds {
		d.Wait(t, time.Minute)
	}
	return reads
}

// TestFleetReadsGitHubOnce: three hosts read demand and inventory at most 10% more than one host
// over the same number of poll intervals (the leader reads; followers read etcd).
func TestFleetReadsGitHubOnce(t *testing.T) {
	const window = 15 * time.Second // 15 poll intervals of 1s
	one := readsOver(t, 1, window)
	three := readsOver(t, 3, window)
	t.Logf("demand and inventory reads over %s: 1 host %d, 3 hosts %d", window, one, three)
	if float64(three) > 1.1*float64(one) {
		t.Fatalf("three hosts made %d demand and inventory reads, one host %d: more than 10%% above", three, one)
	}
}
