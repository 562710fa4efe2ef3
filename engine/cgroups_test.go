package engine

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/runner-manager/runner-manager/journal"
)

func TestOrphanCgroups(t *testing.T) {
	live := func(id, cgroup string) journal.Attempt {
		return journal.Attempt{ID: id, Cgroup: cgroup, State: journal.StateStarted}
	}
	for _, tc := range []struct {
		name    string
		present []string
		live    []journal.Attempt
		want    []string
	}{
		{"none present", nil, []journal.Attempt{live("h1-1", "/cg/runners/h1-1")}, nil},
		{"a live runner's cgroup is adopted", []string{"h1-1"}, []journal.Attempt{live("h1-1", "/cg/runners/h1-1")}, nil},
		{"a live attempt journaled before cgroups were recorded keeps the cgroup its id names", []string{"h1-1"}, []journal.Attempt{live("h1-1", "")}, nil},
		{"a cgroup no live attempt names is an orphan", []string{"h1-2", "h1-1", "h1-3"}, []journal.Attempt{live("h1-1", "/cg/runners/h1-1")}, []string{"h1-2", "h1-3"}},
		{"nothing live: every cgroup is an orphan", []string{"h1-9"}, nil, []string{"h1-9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := orphanCgroups(tc.present, tc.live); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("orphanCgroups = %v, want %v", got, tc.want)
			}
		})
	}
}

// cgroupWorld is the world with a cgroup per runner, checking the journal-first order: a cgroup
// is made by Start only once the registered record names it, and removed before cleaned.
type cgroupWorld struct {
	*world
	mu      sync.Mutex
	cgroups map[string]bool // attempt id -> exists
	removed []string
}

func (c *cgroupWorld) CgroupPath(id string) string { return "/cg/runners/" + id }

func (c *cgroupWorld) Cgroups() ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id := range c.cgroups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

func (c *cgroupWorld) RemoveCgroup(_ context.Context, id string) error {
	if a, err := c.j.Get(context.Background(), id); err == nil && a.State == journal.StateCleaned {
		c.t.Errorf("cgroup of %s removed after it was journaled cleaned", id)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cgroups, id)
	c.removed = append(c.removed, id)
	return nil
}

func (c *cgroupWorld) Start(ctx context.Context, spec LaunchSpec) (Process, error) {
	a, err := c.j.Get(ctx, spec.AttemptID)
	if err != nil {
		return Process{}, err
	}
	if a.Cgroup != c.CgroupPath(a.ID) {
		return Process{}, fmt.Errorf("start of %s: its cgroup is not journaled (record says %q)", a.ID, a.Cgroup)
	}
	c.mu.Lock()
	c.cgroups[a.ID] = true
	c.mu.Unlock()
	return c.world.Start(ctx, spec)
}

// cgroupHarness is a harness whose launcher gives runners cgroups, with queued jobs for acme/a.
func cgroupHarness(t *testing.T, queued int) (*harness, *cgroupWorld) {
	h := newHarness(t)
	cw := &cgroupWorld{world: h.w, cgroups: map[string]bool{}}
	h.launcher = cw
	h.s = h.newSupervisor()
	h.w.setQueued("repo:acme/a", queued)
	return h, cw
}

func TestRunnerCgroupIsJournaledBeforeStartAndRemovedBeforeCleaned(t *testing.T) {
	h, cw := cgroupHarness(t, 2)
	h.begin(cfgOf(baseTarget("a")))
	if got := h.byState("a"); got["started"] != 2 {
		t.Fatalf("after the first pass: %v, want 2 started", got)
	}
	h.runJobsOfA()
	if got := h.byState("a"); got["cleaned"] != 2 || len(got) != 1 {
		t.Fatalf("after jobs finished: %v, want 2 cleaned", got)
	}
	if left, _ := cw.Cgroups(); len(left) != 0 {
		t.Errorf("runner cgroups left after their attempts were cleaned: %v", left)
	}
	h.mu.Lock()
	points := slices.Clone(h.crash)
	h.mu.Unlock()
	if !slices.Contains(points, CrashAfterCgroupRemoved) {
		t.Errorf("crash point %s never reached (got %v)", CrashAfterCgroupRemoved, points)
	}
}

// TestRestartAdoptsALiveRunnersCgroupAndRemovesOrphans: after a restart, the cgroup of a runner
// still running is left to it, and one no attempt names (a lost journal's) is killed and removed
// before any loop could launch.
func TestRestartAdoptsALiveRunnersCgroupAndRemovesOrphans(t *testing.T) {
	h, cw := cgroupHarness(t, 1)
	cfg := cfgOf(baseTarget("a"))
	h.begin(cfg)
	live, _ := cw.Cgroups()
	if len(live) != 1 {
		t.Fatalf("cgroups after one launch: %v, want one", live)
	}
	h.stop()

	cw.mu.Lock()
	cw.cgroups[testHost+"-orphan"] = true
	cw.mu.Unlock()
	h.s = h.newSupervisor()
	h.begin(cfg)
	got, _ := cw.Cgroups()
	if !reflect.DeepEqual(got, live) {
		t.Errorf("cgroups after the restart: %v, want the live runner's %v kept and the orphan removed", got, live)
	}
	if !slices.Equal(cw.removed, []string{testHost + "-orphan"}) {
		t.Errorf("removed %v, want only the orphan", cw.removed)
	}
}
