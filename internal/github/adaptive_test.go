package github

import (
	"context"
	"fmt"
	"testing"
)

// An idle repository is read every 4th pass once 3 reads in a row answered 304, and its
// in_progress runs only every 4th read; each of those reads is a 304 (no budget). A job queued
// while it is idle is found within one idle interval (4 passes).
func TestIdleRepositoryIsReadEveryFourthPass(t *testing.T) {
	s := newSim(t)
	c, _ := s.tokenClient(s.token)
	ctx := context.Background()
	pass := func() []Job {
		t.Helper()
		jobs, err := c.QueuedJobs(ctx, repoScope, []string{"linux"})
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	for range 4 { // the first read (200) and three 304s
		pass()
	}
	before := len(s.Requests())
	for range 16 {
		pass()
	}
	reads := 0
	for _, r := range s.Requests()[before:] {
		if !r.NotModified {
			t.Errorf("an idle read was charged: %+v", r)
		}
		if r.Endpoint != "GET /repos/{owner}/{repo}/actions/runs" {
			t.Errorf("unexpected request while idle: %+v", r)
		}
		reads++
	}
	// Passes 8, 12, 16 and 20 read queued runs; pass 8's read is the 4th since in_progress
	// runs were last read, so it reads those too.
	if reads != 5 {
		t.Fatalf("16 idle passes sent %d run listings, want 5 (4 of queued runs, 1 of runs in progress)", reads)
	}

	id, _ := s.srv.QueueJob("acme/api", []string{"linux"}, -1)
	found := -1
	for i := range 4 {
		if jobs := pass(); len(jobs) == 1 && jobs[0].ID == id {
			found = i
			break
		}
	}
	if found < 0 {
		t.Fatalf("a job queued in an idle repository was not found within 4 passes")
	}
	// Active again: read every pass, in_progress runs too.
	before = len(s.Requests())
	pass()
	if n := len(s.Requests()) - before; n < 2 {
		t.Fatalf("an active repository's pass sent %d requests, want queued and in_progress runs", n)
	}
}

// TestIdleReadsKeepTheirStateBounded: what the client keeps for idle repositories (the ETag
// cache, the pace book) is as large after 40 passes as after the first two, in entries and in
// bytes: an idle daemon's memory comes from its targets, not from how long it runs (issue 28,
// item 5; the bench's idle1000-30m row measures the daemon's RSS over 30 minutes).
func TestIdleReadsKeepTheirStateBounded(t *testing.T) {
	s := newSim(t)
	const repos = 20
	for i := range repos {
		s.srv.CreateRepo("acme", fmt.Sprintf("r%02d", i))
	}
	c, _ := s.tokenClient(s.token)
	cache := c.gh.Client().Transport.(*authorize).next.(*etagCache)
	ctx := context.Background()
	type state struct{ entries, bytes, paces int }
	now := func() state {
		cache.mu.Lock()
		defer cache.mu.Unlock()
		c.pace.mu.Lock()
		defer c.pace.mu.Unlock()
		return state{len(cache.entries), cache.bytes, len(c.pace.repos)}
	}
	var after2 state
	for pass := range 40 {
		for i := range repos {
			scope := Scope{Owner: "acme", Repo: fmt.Sprintf("r%02d", i)}
			if _, err := c.QueuedJobs(ctx, scope, []string{"linux"}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.ListRunners(ctx, scope); err != nil {
				t.Fatal(err)
			}
		}
		if pass == 1 {
			after2 = now()
		}
	}
	if got := now(); got != after2 || got.paces != repos || got.entries != 3*repos {
		t.Fatalf("after 40 idle passes of %d repositories: %+v; after 2: %+v (want %d paces, %d cache entries, unchanged)", repos, got, after2, repos, 3*repos)
	}
}
