//go:build e2e

package faults

import (
	"fmt"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// TestGovernorAtScale is issue 16's acceptance, scaled for CI: a simulator enforcing 90 points a
// minute, the governor's ceiling at 60, 100 repository targets and an organization of 30
// repositories, webhooks on, for at least 60 s. GitHub (the simulator) answers no request with a
// secondary limit, and queued jobs still start, the organization's too: the plan stretches the
// polls, and a delivery starts its job's runner without a read of GitHub.
func TestGovernorAtScale(t *testing.T) {
	repos := append(numbered("acme/r%03d", 100), numbered("big/b%02d", 30)...)
	sim, cfg := governed(t, repos, 90, 60)
	hookURL := cfg.WithWebhook(t, 30*time.Second)
	for i := range 100 {
		cfg.Add(harness.RepoTarget(fmt.Sprintf("r%03d", i), repos[i], e2eLabels, 1))
	}
	cfg.Add(harness.OrgTarget("big", "big", e2eLabels, 1))
	start := time.Now()
	d := harness.StartDaemon(t, cfg.Write(t))
	sim.AddWebhook(hookURL, harness.WebhookSecret)

	var jobs []int64
	for _, r := range []string{"acme/r007", "acme/r042", "acme/r099", "big/b17"} {
		jobs = append(jobs, sim.MustQueue(t, r, e2eLabels, 200*time.Millisecond))
	}
	sim.WaitJobsDone(t, 2*time.Minute, jobs...)
	t.Logf("%d jobs done %s after the start", len(jobs), time.Since(start).Round(time.Second))
	if left := time.Minute - time.Since(start); left > 0 {
		time.Sleep(left) // the load runs its full minute; what is checked is counted, not timed
	}
	// The jobs are done at GitHub a moment before their runners' processes end; the stop comes
	// once the daemon has seen every runner end, so what AssertNoLeaks checks is the conclusion of
	// ended runners, not a busy runner left for recovery by a drain that began a moment too soon.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(250 * time.Millisecond) { // a real daemon, bounded
		busy := 0
		for _, tg := range d.Status(t).Targets {
			busy += tg.Busy
		}
		if busy == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runners still busy a minute after their jobs were done", busy)
		}
	}
	if snap := d.Status(t); snap.GitHubPolling == nil || snap.GitHubPolling.Message == "" {
		t.Errorf("status does not say the polls were stretched: %+v", snap.GitHubPolling)
	}
	stopWithin(t, d, drainBound(cfg))
	answers := sim.LimitAnswers()
	for _, kind := range []string{ghsim.LimitPoints, ghsim.LimitConcurrent, ghsim.LimitContent, ghsim.LimitPrimary, ghsim.LimitRegistration} {
		if answers[kind] != 0 {
			t.Errorf("the simulator refused %d requests for the %s limit", answers[kind], kind)
		}
	}
	t.Logf("peak %d points in a minute (simulator limit 90, governor ceiling 60); requests %v", sim.PeakPointsPerMinute(), sim.Requests())
	// With polls stretched to minutes, an ended runner is still concluded at once: its exit
	// is checked locally between passes (engine Options.ExitCheck).
	harness.AssertNoLeaks(t, sim, cfg.StateDir)
}
