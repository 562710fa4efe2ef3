package fleet

import (
	"fmt"
	"sync"
	"testing"

	"github.com/runner-manager/runner-manager/internal/fleet/etcdtest"
	ghub "github.com/runner-manager/runner-manager/internal/github"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

// governor stands for this host's request governor: what it spent is set by the test, and it
// keeps the fleet's last word on its share. The fleet's side of sharing (etcd) is real.
type governor struct {
	mu    sync.Mutex
	spend map[string]ghub.Spend
	share *ghub.FleetShare
	calls int
	wants chan struct{}
}

func newGovernor() *governor { return &governor{wants: make(chan struct{}, 1)} }

func (g *governor) Spend() map[string]ghub.Spend {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]ghub.Spend{}
	for k, v := range g.spend {
		out[k] = v
	}
	return out
}

func (g *governor) SetFleet(fs *ghub.FleetShare) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.share, g.calls = fs, g.calls+1
}

func (g *governor) Wants() <-chan struct{} { return g.wants }

func (g *governor) spent(points int, waiting bool) {
	g.mu.Lock()
	g.spend = map[string]ghub.Spend{"": {Points: points, Waiting: waiting}}
	g.mu.Unlock()
}

// shared is the governor's share now: its hosts, and its own points a minute of a 600 ceiling
// (-1 with no share: the whole ceiling, alone).
func (g *governor) shared() (hosts, share int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.share == nil {
		return 0, -1
	}
	own := g.spend[""]
	return g.share.Hosts, g.share.ShareOf(600, "", own)
}

func (g *governor) String() string {
	h, s := g.shared()
	return fmt.Sprintf("%d hosts, share %d", h, s)
}

// TestGovernorCeilingIsSharedThroughEtcd: each host publishes its spend under its lease and each
// governor's share follows the others' (ghub.TestFleetSharedCeilingHolds holds the arithmetic): a
// host that leaves stops counting at once, and with etcd gone each host has the whole ceiling
// again (degraded mode, in status), until it rejoins.
func TestGovernorCeilingIsSharedThroughEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	govs := []*governor{newGovernor(), newGovernor(), newGovernor()}
	var hs []*host
	for i, name := range []string{"a", "b", "c"} {
		hs = append(hs, startHostGov(t, srv, name, "id-"+name, &github{}, govs[i]))
	}
	a, b, c := govs[0], govs[1], govs[2]
	// Three hosts of 600: floors of 50, a pool of 450. a wants more than its part, b is content.
	a.spent(400, true)
	b.spent(90, false)
	// c: floor 50 + nothing above it + (450 - 350 - 40 used) / 2 wanting = 80.
	livetest.Eventually(t, "c's share to count a's and b's spend", func() bool { h, s := c.shared(); return h == 3 && s == 80 })
	// a: floor 50 + its 350 above it + the unspent 60, as nobody else waits: 460.
	livetest.Eventually(t, "a's share", func() bool { h, s := a.shared(); return h == 3 && s == 460 })
	// c starts waiting (and says so at once): a falls to 50 + its fair part (450-40)/2 + 60/2 = 285.
	c.spent(0, true)
	c.wants <- struct{}{}
	livetest.Eventually(t, "a to yield to c", func() bool { h, s := a.shared(); return h == 3 && s == 285 })
	livetest.Eventually(t, "status to show each host's spend", func() bool {
		st := hs[2].f.Status()
		got := map[string]int{}
		for _, h := range st.Hosts {
			got[h.Name] = h.PointsPerMinute
		}
		return got["a"] == 400 && got["b"] == 90 && got["c"] == 0
	})

	// a leaves: its spend stops counting with its membership.
	hs[0].stop()
	// c: 2 hosts, floors of 75, a pool of 450: 75 + 0 + (450 - 15) / 1 = 510.
	livetest.Eventually(t, "c's share without a", func() bool { h, s := c.shared(); return h == 2 && s == 510 })

	// etcd gone: each host alone, with the whole ceiling, and says so.
	srv.Stop()
	livetest.Eventually(t, "b and c to have the whole ceiling", func() bool {
		_, sb := b.shared()
		_, sc := c.shared()
		return sb == -1 && sc == -1 && !hs[1].f.Status().Joined && !hs[2].f.Status().Joined
	})
	srv.Start()
	livetest.Eventually(t, "a shared ceiling again after rejoining", func() bool {
		hb, _ := b.shared()
		hc, _ := c.shared()
		return hb == 2 && hc == 2
	})
}
