package github

import (
	"context"
	"errors"
	"fmt"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestGenerateJITConfigRepoAndOrg(t *testing.T) {
	s := newSim(t)
	gid := s.srv.CreateRunnerGroup("acme", "Linux Fleet")
	c, _ := s.tokenClient(s.token)
	ctx := context.Background()

	jit, err := c.GenerateJITConfig(ctx, repoScope, "runner-manager-7", []string{"self-hosted", "linux"}, 0, "_work")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := runnerproto.Decode(jit.Encoded)
	if err != nil || cfg.RunnerName != "runner-manager-7" || cfg.WorkFolder != "_work" || jit.RunnerID != cfg.RunnerID {
		t.Fatalf("jit %v decoded %+v, %v", jit, cfg, err)
	}
	if strings.Contains(jit.String(), jit.Encoded) || strings.Contains(fmt.Sprint(jit), jit.Encoded) {
		t.Fatal("JITConfig prints its encoded config")
	}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "jit", jit)
	if strings.Contains(logged.String(), jit.Encoded) {
		t.Fatal("JITConfig logs its encoded config")
	}

	org := OrgScope("acme")
	id, err := c.RunnerGroupID(ctx, org, "linux fleet")
	if err != nil || id != gid {
		t.Fatalf("RunnerGroupID = %d, %v; want %d", id, err, gid)
	}
	before := len(s.Requests())
	if id2, _ := c.RunnerGroupID(ctx, org, "Linux Fleet"); id2 != gid || len(s.Requests()) != before {
		t.Fatal("runner group lookup not cached")
	}
	if _, err := c.RunnerGroupID(ctx, org, "nope"); err == nil || !strings.Contains(err.Error(), `no runner group "nope"`) {
		t.Fatalf("unknown group: %v", err)
	}
	if _, err := c.RunnerGroupID(ctx, repoScope, "Linux Fleet"); err == nil {
		t.Fatal("a repository accepted a runner group")
	}
	ojit, err := c.GenerateJITConfig(ctx, org, "runner-manager-8", []string{"gpu"}, id, "")
	if err != nil {
		t.Fatal(err)
	}
	rs := s.srv.Runners()
	i := slices.IndexFunc(rs, func(r ghsim.Runner) bool { return r.ID == ojit.RunnerID })
	if i < 0 || rs[i].Scope != "acme" || rs[i].GroupID != gid {
		t.Fatalf("org runner %+v", rs)
	}
}

func TestListDeleteRunners(t *testing.T) {
	s := newSim(t)
	c, _ := s.tokenClient(s.token)
	ctx := context.Background()
	var ids []int64
	for i := 0; i < 130; i++ { // more than one page of 100
		jit, err := c.GenerateJITConfig(ctx, repoScope, fmt.Sprintf("runner-manager-%d", i), []string{"linux"}, 0, "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, jit.RunnerID)
	}
	all, err := c.ListRunners(ctx, repoScope)
	if err != nil || len(all) != 130 {
		t.Fatalf("ListRunners: %d runners, %v", len(all), err)
	}
	r, ok := runnerNamed(all, "runner-manager-129") // on the second page
	if !ok || r.ID != ids[129] || r.Status != "offline" || r.Busy {
		t.Fatalf("runner-manager-129 = %+v, %v", r, ok)
	}
	if err := c.DeleteRunner(ctx, repoScope, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteRunner(ctx, repoScope, ids[0]); err != nil {
		t.Fatalf("deleting a gone runner: %v", err)
	}
	s.srv.QueueJob("acme/api", []string{"linux"}, -1)
	busy, _ := c.GenerateJITConfig(ctx, repoScope, "runner-manager-busy", []string{"linux"}, 0, "")
	takeJob(t, s, busy)
	err = c.DeleteRunner(ctx, repoScope, busy.RunnerID)
	if !errors.Is(err, ErrRunnerBusy) || IsTerminal(err) || IsRetryable(err) {
		t.Fatalf("busy runner: %v", err)
	}
}

func TestOrgRunnersAndConcurrentUse(t *testing.T) {
	s := newSim(t)
	c, _ := s.tokenClient(s.token)
	ctx := context.Background()
	org := OrgScope("acme")
	s.srv.QueueJob("acme/api", []string{"linux"}, -1)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 4; i++ { // target loops share one client
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := c.GenerateJITConfig(ctx, org, fmt.Sprintf("runner-manager-%d", i), []string{"linux"}, 0, "")
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := c.QueuedJobs(ctx, repoScope, []string{"linux"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rs, err := c.ListRunners(ctx, org)
	if err != nil || len(rs) != 4 {
		t.Fatalf("org runners %d, %v", len(rs), err)
	}
	r, ok := runnerNamed(rs, "runner-manager-2")
	if !ok {
		t.Fatalf("runner-manager-2 not among the org runners %+v", rs)
	}
	if err := c.DeleteRunner(ctx, org, r.ID); err != nil {
		t.Fatal(err)
	}
	if rs, err = c.ListRunners(ctx, org); err != nil {
		t.Fatal(err)
	}
	if _, ok := runnerNamed(rs, "runner-manager-2"); ok {
		t.Fatal("deleted org runner still listed")
	}
}

// runnerNamed picks the runner called name out of a ListRunners answer.
func runnerNamed(rs []Runner, name string) (Runner, bool) {
	for _, r := range rs {
		if r.Name == name {
			return r, true
		}
	}
	return Runner{}, false
}
