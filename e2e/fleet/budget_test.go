//go:build e2e

package fleet

import (
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/fleet/etcdtest"
)

// TestFleetSharesOneGitHubCeiling: three daemons of one account with github.points_per_minute =
// 120 launch for a burst of 30 jobs (150 points of registrations alone, more than a minute's
// ceiling): at the simulator the fleet's busiest minute holds at most one ceiling, not three, and
// every job runs on exactly one registration. The burst keeps each host's pass launching for
// longer than the engine's call timeout (2 min): a publication cut by that timeout once made the
// host take etcd for lost and serve the next pass alone, launching for the whole demand with the
// whole ceiling (registrations over the jobs, left registered by the stop).
func TestFleetSharesOneGitHubCeiling(t *testing.T) {
	const ceiling, jobs = 120, 30
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{repo}})
	etcd := etcdtest.Start(t)
	ds, cs := fleetOf(t, sim, etcd, 3, func(_ int, c *harness.Config) {
		c.File.GitHub.PointsPerMinute = ceiling
		c.File.Targets[0].MaxRunners = 10
		c.File.Daemon.MaxRunners = 10
	})
	waitJoined(t, ds, 3)
	var ids []int64
	for range jobs {
		ids = append(ids, sim.MustQueue(t, repo, labels, 2*time.Second))
	}
	sim.WaitJobsDone(t, 6*time.Minute, ids...)
	if peak := sim.PeakPointsPerMinute(); peak > ceiling {
		t.Errorf("the fleet spent %d points in its busiest minute at the simulator, over the shared ceiling of %d", peak, ceiling)
	} else {
		t.Logf("busiest minute: %d points of %d", peak, ceiling)
	}
	if n := sim.Requests()[jitRoute]; n > jobs {
		t.Errorf("%d JIT registrations for %d jobs: a host served a pass alone", n, jobs)
	}
	stopAll(t, ds)
	for _, c := range cs {
		harness.AssertNoLeaks(t, sim, c.StateDir)
	}
}
