package github

import (
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

// Issue 28 item 2: a client seeded with the counts a previous run journaled plans an organization
// at its size from the start, with the stretch that size needs, not as one repository.
func TestSeededRepoCountsKeepThePlansStretch(t *testing.T) {
	cfg := &config.Config{GitHub: config.GitHub{PointsPerMinute: 600}, Targets: []config.Target{
		{Name: "big", Organization: "big", MaxRunners: 1, PollInterval: config.Duration(30 * time.Second)}}}
	plan := func(c *Client) PollPlan {
		return PlanConfig(cfg, func(t config.Target) time.Duration { return t.PollInterval.D() }, c.RepoCount)
	}
	last := newBare(Options{})
	last.noteRepoCount("big", 300) // the previous run listed it
	fresh, seeded := newBare(Options{}), newBare(Options{})
	seeded.SeedRepoCounts(last.RepoCounts())
	if got, want := plan(seeded).Stretch, plan(last).Stretch; got != want || want <= 1 {
		t.Fatalf("seeded client's stretch %.2f, want the last run's %.2f (> 1)", got, want)
	}
	if s := plan(fresh).Stretch; s != 1 {
		t.Fatalf("an unseeded client plans the organization as one repository: stretch %.2f, want 1", s)
	}
	seeded.noteRepoCount("big", 10) // its own listing wins
	seeded.SeedRepoCounts(map[string]int{"big": 300})
	if n, _ := seeded.RepoCount("big"); n != 10 {
		t.Fatalf("a seed replaced the client's own listing: %d", n)
	}
}
