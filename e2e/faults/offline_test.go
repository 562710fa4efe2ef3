//go:build e2e

package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// TestOfflineTargetsDoNotSlowAHealthyOne (promise 8): next to a healthy target, one target names a
// repository GitHub does not know (404: terminal backoff) and one whose every call hangs. The
// healthy target keeps polling every poll_interval and its jobs are picked up as fast as with no
// broken neighbour; a stop still ends within shutdown_drain_timeout although a call is hanging.
func TestOfflineTargetsDoNotSlowAHealthyOne(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web", "acme/slow"}})
	rec := StartRecorder(t, sim)
	cfg := harness.NewConfig(t, sim)
	cfg.File.GitHub.APIURL = rec.URL()
	// Three targets polling every second need 540 points a minute, more than the default
	// ceiling plans for: without this the governor would stretch every interval (docs/github.md).
	cfg.File.GitHub.PointsPerMinute = 900
	cfg.Add(harness.RepoTarget("web", "acme/web", e2eLabels, 2))
	d := harness.StartDaemon(t, cfg.Write(t))

	// Baseline: the healthy target alone (the first job also fills the runner package cache).
	sim.WaitJobsDone(t, jobTimeout, sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond))
	var baseline time.Duration
	aloneSince := time.Now()
	for range 2 {
		id := sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond)
		sim.WaitJobsDone(t, jobTimeout, id)
		baseline = max(baseline, pickupLatency(t, sim, id))
	}
	aloneGap := passStarts(rec, aloneSince).filter("/repos/acme/web/").maxGap()

	hang := sim.AddFault(ghsim.Fault{Path: "/repos/acme/slow/**", Kind: ghsim.FaultLatency, Latency: 10 * time.Minute})
	mark := d.Mark()
	cfg.Add(harness.RepoTarget("gone", "acme/missing", e2eLabels, 2), harness.RepoTarget("slow", "acme/slow", e2eLabels, 2))
	harness.WriteConfigViaRename(t, cfg.Path, cfg.Render(t))
	d.WaitLog(t, mark, `"msg":"config reloaded"`, 30*time.Second)
	gone := waitTarget(t, d, "gone", 30*time.Second, "terminal backoff for a repository GitHub does not know", backingOff("terminal"))
	harness.Eventually(t, 30*time.Second, "a hanging call of target slow", func() bool { return sim.FaultHits(hang) > 0 })

	since := time.Now()
	var worst time.Duration
	for range 3 {
		id := sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond)
		sim.WaitJobsDone(t, jobTimeout, id)
		worst = max(worst, pickupLatency(t, sim, id))
	}
	// The healthy target's jobs wait at most a poll interval (+10 % jitter) longer than alone, plus
	// a second for a loaded machine; a neighbour's hanging call (30 s per attempt) is far beyond.
	if bound := baseline + 2100*time.Millisecond; worst > bound {
		t.Errorf("with broken neighbours the healthy target's slowest pickup took %s; alone %s (bound %s)", worst, baseline, bound)
	}
	// Its passes keep their rhythm: no gap between two passes longer than alone (or than the poll
	// interval with jitter), plus two seconds for a pass that launched a runner on a loaded machine.
	window := time.Since(since)
	passes := passStarts(rec, since).filter("/repos/acme/web/")
	if gap, bound := passes.maxGap(), max(aloneGap, 1100*time.Millisecond)+2*time.Second; gap > bound {
		t.Errorf("with broken neighbours the healthy target's passes were up to %s apart; alone %s (bound %s):\n%s",
			gap, aloneGap, bound, rec.Dump(since))
	}
	if !strings.Contains(gone.LastError, "acme/missing") {
		t.Errorf("status of target gone does not name the missing repository: %q", gone.LastError)
	}
	t.Logf("pickup latency: alone %s, with broken neighbours at most %s; %d healthy passes in %s (largest gap %s, alone %s); gone: %q",
		baseline, worst, len(passes), window.Round(time.Millisecond), passes.maxGap(), aloneGap, gone.LastError)

	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)
	stopWithin(t, d, drainBound(cfg))
	sim.RemoveFault(hang)
	harness.AssertNoLeaks(t, sim, cfg.StateDir)
}

type requests []Request

func (rs requests) filter(pathPrefix string) requests {
	var out requests
	for _, r := range rs {
		if strings.HasPrefix(r.Path, pathPrefix) {
			out = append(out, r)
		}
	}
	return out
}

// maxGap is the longest time between two consecutive requests.
func (rs requests) maxGap() time.Duration {
	var gap time.Duration
	for i := 1; i < len(rs); i++ {
		gap = max(gap, rs[i].Start.Sub(rs[i-1].Start))
	}
	return gap
}
