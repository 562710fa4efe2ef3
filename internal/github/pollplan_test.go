package github

import (
	"fmt"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

func TestPassPoints(t *testing.T) {
	for _, tc := range []struct {
		org   bool
		repos int
		want  int
	}{
		{false, 1, 3},  // runners, queued runs, in_progress runs
		{true, 30, 62}, // runners, one page of repositories, 2 per repository
		{true, 100, 202},
		{true, 300, 604}, // three pages
		{true, 0, 2},
	} {
		if got := PassPoints(tc.org, tc.repos); got != tc.want {
			t.Errorf("PassPoints(%v, %d) = %d, want %d", tc.org, tc.repos, got, tc.want)
		}
	}
}

// TestPlanPolls: targets that fit keep their intervals; targets that do not are stretched by one
// factor for all, so the plan fits the part of the ceiling left for polls, and the message says so.
func TestPlanPolls(t *testing.T) {
	repos := func(n int, iv time.Duration) []PollTarget {
		var ts []PollTarget
		for i := range n {
			ts = append(ts, PollTarget{Name: fmt.Sprintf("t%04d", i), Interval: iv, Points: PassPoints(false, 1)})
		}
		return ts
	}
	for _, tc := range []struct {
		name     string
		ceiling  int
		targets  []PollTarget
		interval time.Duration // of t0000
		message  string
		window   time.Duration // StartWindow: one pass of every target at the planned rate
	}{
		{"one target", 600, repos(1, 10*time.Minute), 10 * time.Minute, "", 3 * time.Minute / 432}, // 3 of 432 points/min
		{"fits", 600, repos(10, 30*time.Second), 30 * time.Second, "", 30 * time.Minute / 432},
		{"just fits", 600, repos(72, 30*time.Second), 30 * time.Second, "", 30 * time.Second}, // 432 points/min = 0.8 x (600 - 30 - 30)
		{"1,000 targets", 600, repos(1000, 30*time.Second), 417 * time.Second,
			"1000 targets need 6000 points/min at poll_interval 30s; the ceiling is 600: polling every 6m57s instead", 3000 * time.Minute / 432},
		{"CI-scaled", 60, append(repos(100, time.Second), PollTarget{Name: "org", Interval: time.Second, Points: PassPoints(true, 30)}), 578 * time.Second,
			"101 targets need 21720 points/min at poll_interval 1s; the ceiling is 60: polling every 9m38s instead", 577659574468}, // 362 of 37.6 points/min = 0.8 x (60 - 10 - 3)
		{"mixed intervals", 60, append(repos(20, time.Second), PollTarget{Name: "slow", Interval: time.Minute, Points: 3}), 96 * time.Second,
			"21 targets need 3603 points/min at their poll intervals; the ceiling is 60: every interval is 95.8x longer", 100531914893},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanPolls(tc.ceiling, tc.targets)
			if got := p.Interval("t0000", 0); got != tc.interval {
				t.Fatalf("interval %s, want %s", got, tc.interval)
			}
			if p.Message != tc.message {
				t.Fatalf("message %q, want %q", p.Message, tc.message)
			}
			if p.StartWindow != tc.window {
				t.Fatalf("start window %s, want %s", p.StartWindow, tc.window)
			}
			planned := 0.0
			for _, tg := range tc.targets {
				planned += float64(tg.Points) * float64(time.Minute) / float64(p.Interval(tg.Name, 0))
			}
			if limit := float64(GovernorOptions{PointsPerMinute: tc.ceiling}.pointsRefill()) * pollShare; planned > limit+0.001 {
				t.Fatalf("planned %.1f points/min, more than the %.1f left for polls", planned, limit)
			}
			if got := p.Interval("unknown", time.Minute); got != time.Minute {
				t.Fatalf("unknown target: %s", got)
			}
		})
	}
}

// TestPlanPhasesSpreadEvenly: n targets get phases i/n of the interval, by name.
func TestPlanPhasesSpreadEvenly(t *testing.T) {
	p := PlanPolls(600, []PollTarget{{"c", 30 * time.Second, 3}, {"a", 30 * time.Second, 3}, {"b", 30 * time.Second, 3}})
	for name, want := range map[string]time.Duration{"a": 0, "b": 10 * time.Second, "c": 20 * time.Second} {
		if got := p.Phase(name, 30*time.Second); got != want {
			t.Errorf("phase of %s = %s, want %s", name, got, want)
		}
	}
}

// TestPlanAccount: an account's plan costs its own targets only, against its own ceiling.
func TestPlanAccount(t *testing.T) {
	iv := config.Duration(10 * time.Second)
	cfg := &config.Config{GitHub: config.GitHub{PointsPerMinute: 600},
		Accounts: []config.Account{{Name: "globex", GitHub: config.GitHub{PointsPerMinute: 300}}},
		Targets: []config.Target{
			{Name: "web", Repository: "acme/web", MaxRunners: 1, PollInterval: iv},
			{Name: "api", Repository: "globex/api", Account: "globex", MaxRunners: 1, PollInterval: iv},
			{Name: "db", Repository: "globex/db", Account: "globex", MaxRunners: 1, PollInterval: iv},
		}}
	interval := func(t config.Target) time.Duration { return t.PollInterval.D() }
	none := func(string) (int, bool) { return 0, false }
	for _, tc := range []struct {
		account       string
		ceiling, need int
	}{
		{config.DefaultAccount, 600, 18}, // web: 3 points 6 times a minute
		{"globex", 300, 36},              // api and db
	} {
		p := PlanAccount(cfg, tc.account, interval, none)
		if p.Ceiling != tc.ceiling || p.Need != tc.need {
			t.Errorf("account %s: ceiling %d need %d, want %d and %d", tc.account, p.Ceiling, p.Need, tc.ceiling, tc.need)
		}
	}
}
