//go:build e2e

package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/fleet/etcdtest"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

const setName = "web-set"

// scaleSetJITs is the scale-set JIT registrations the simulator's Actions service answered.
func scaleSetJITs(sim *harness.Sim) int {
	n := 0
	for route, c := range sim.ActionsCalls() {
		if strings.Contains(route, "generatejitconfig") {
			n += c
		}
	}
	return n
}

// sessionMonitor samples the set's sessions until end: GitHub allows one per set, and a fleet
// must never even ask for a second (a refused create shows a host that is not the leader trying).
type sessionMonitor struct {
	stop, done chan struct{}
	conflicts  int
	sets       int
}

func watchSessions(sim *harness.Sim) *sessionMonitor {
	m := &sessionMonitor{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			for _, s := range sim.ScaleSets() {
				m.conflicts = max(m.conflicts, s.Conflicts)
			}
			m.sets = max(m.sets, len(sim.ScaleSets()))
			select {
			case <-m.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return m
}

func (m *sessionMonitor) end() { close(m.stop); <-m.done }

// TestFleetScaleSetOneSession: three hosts serve a scale-set target. Only its leader holds the
// set's message session; a burst of 10 jobs runs on the fleet with at most 10 registrations; kill
// -9 of the leader hands the session over (the new leader deletes the dead one's session rather
// than waiting the hour the simulator keeps it here), and the jobs queued after still run. No host
// ever asks for a second session.
func TestFleetScaleSetOneSession(t *testing.T) {
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{repo},
		Actions: ghsim.ActionsOptions{SessionExpiry: time.Hour, AssignTimeout: time.Hour}})
	etcd := etcdtest.Start(t)
	ds, _ := fleetOf(t, sim, etcd, 3, func(_ int, c *harness.Config) {
		tg := c.Target(t, "web")
		tg.Labels, tg.ScaleSet = nil, setName
	})
	waitJoined(t, ds, 3)
	mon := watchSessions(sim)
	harness.Eventually(t, time.Minute, "the leader's session open", func() bool {
		s := sim.ScaleSets()
		return len(s) == 1 && s[0].Session != ""
	})
	before := scaleSetJITs(sim)
	var jobs []int64
	for range 10 {
		jobs = append(jobs, sim.MustQueue(t, repo, []string{setName}, 3*time.Second))
	}
	sim.WaitJobsDone(t, 3*time.Minute, jobs...)
	if got := scaleSetJITs(sim) - before; got > 10 {
		t.Errorf("10 queued jobs made %d scale-set registrations fleet-wide, want at most 10", got)
	}
	if s := sim.ScaleSets()[0]; s.Opened != 1 {
		t.Errorf("%d sessions opened before the kill, want 1 (the leader's)", s.Opened)
	}

	_, rest := killLeader(t, ds)
	var after []int64
	for range 4 {
		after = append(after, sim.MustQueue(t, repo, []string{setName}, time.Second))
	}
	sim.WaitJobsDone(t, 2*time.Minute, after...)
	mon.end()
	if s := sim.ScaleSets()[0]; s.Opened != 2 || s.Session == "" {
		t.Errorf("after the kill: %d sessions opened (want 2: the new leader's), session %q", s.Opened, s.Session)
	}
	if mon.conflicts != 0 || mon.sets != 1 {
		t.Errorf("%d session creates refused and %d sets seen; want none refused and one set", mon.conflicts, mon.sets)
	}
	stopAll(t, rest)
}
