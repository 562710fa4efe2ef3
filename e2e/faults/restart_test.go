//go:build e2e

package faults

import (
	"fmt"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// TestCrashLoopKeepsTheGovernorsMinute is issue 28 item 2's acceptance: a daemon killed with
// SIGKILL a few seconds into every life and started again at once, for a minute and more, as a
// crash loop under systemd's Restart= would, never has the simulator (which enforces GitHub's
// secondary limit of points per sliding minute, here 90) refuse a request: each start reads what
// the last governor was granted in the minute before it from the journal (ceiling 80). Without
// the journaled minute every start spends a fresh bucket and the loop goes over.
func TestCrashLoopKeepsTheGovernorsMinute(t *testing.T) {
	repos := numbered("big/b%02d", 60)
	sim, cfg := governed(t, repos, 90, 80)
	// One organization of 60 repositories: its first pass, at once after each start, wants about
	// 120 points, more than a governor admits in a life.
	cfg.Add(harness.OrgTarget("big", "big", e2eLabels, 1))
	path := cfg.Write(t)
	start, lives := time.Now(), 0
	for time.Since(start) < 75*time.Second {
		d := harness.StartDaemon(t, path)
		time.Sleep(3 * time.Second) // its first passes: more than the governor admits at once
		d.Kill9()
		d.Wait(t, 10*time.Second)
		lives++
	}
	answers := sim.LimitAnswers()
	t.Logf("%d lives in %s; peak %d points in a minute (simulator limit 90, governor ceiling 80); limit answers %v",
		lives, time.Since(start).Round(time.Second), sim.PeakPointsPerMinute(), answers)
	for _, kind := range []string{ghsim.LimitPoints, ghsim.LimitConcurrent, ghsim.LimitContent, ghsim.LimitPrimary, ghsim.LimitRegistration} {
		if answers[kind] != 0 {
			t.Errorf("the simulator refused %d requests for the %s limit across %d restarts", answers[kind], kind, lives)
		}
	}
	if peak := sim.PeakPointsPerMinute(); peak > 80 {
		t.Errorf("peak %d points in a sliding minute across restarts, over the governor's ceiling of 80", peak)
	}
	harness.AssertNoLeaks(t, sim, cfg.StateDir)
}

// TestRestartKeepsThePollPlansStretch: the poll plan's stretch survives a restart. An
// organization of 300 repositories stretches the plan once it is listed; after a stop the next
// daemon plans it at that size from its start, before listing it again, instead of as one
// repository (no stretch) until then.
func TestRestartKeepsThePollPlansStretch(t *testing.T) {
	sim, cfg := governed(t, numbered("big/b%03d", 300), 0, 0)
	cfg.Add(harness.OrgTarget("big", "big", e2eLabels, 1))
	path := cfg.Write(t)
	d := harness.StartDaemon(t, path)
	var first float64
	harness.Eventually(t, 30*time.Second, "the organization listed and the plan stretched", func() bool {
		p := d.Status(t).GitHubPolling
		first = p.Stretch
		return p != nil && p.Stretch > 1
	})
	stopWithin(t, d, drainBound(cfg))
	// The next daemon's listing of the organization takes 10 s: its status is read before it.
	sim.AddFault(ghsim.Fault{Method: "GET", Path: "/orgs/*/repos", Kind: ghsim.FaultLatency, Latency: 10 * time.Second, Count: 1})
	d = harness.StartDaemon(t, path)
	p := d.Status(t).GitHubPolling
	if p == nil || p.Stretch != first {
		t.Fatalf("the restarted daemon's plan: %+v, want the last run's stretch %.2f from its start", p, first)
	}
	stopWithin(t, d, drainBound(cfg))
}

// numbered is n names made from format and 0..n-1.
func numbered(format string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

// governed is a simulator of repos enforcing simLimit points a minute, and a config for it whose
// request governor's ceiling is ceiling.
func governed(t *testing.T, repos []string, simLimit, ceiling int) (*harness.Sim, *harness.Config) {
	t.Helper()
	sim := harness.StartSim(t, harness.SimOptions{Repos: repos, Limits: ghsim.Limits{PointsPerMinute: simLimit}})
	cfg := harness.NewConfig(t, sim)
	cfg.File.GitHub.PointsPerMinute = ceiling
	return sim, cfg
}
