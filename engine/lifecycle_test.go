package engine

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

const poll = 30 * time.Second

func TestLaunchSuperviseAndConclude(t *testing.T) {
	h := newHarness(t)
	a := baseTarget("a")
	h.w.setQueued("repo:acme/a", 2)
	h.begin(cfgOf(a))

	if got := h.byState("a"); got["started"] != 2 {
		t.Fatalf("after the first pass: %v, want 2 started", got)
	}
	if n := h.w.takeJobs("repo:acme/a"); n != 2 {
		t.Fatalf("jobs taken = %d", n)
	}
	h.tick(poll, 1, "a")
	if got := h.byState("a"); got["busy"] != 2 {
		t.Fatalf("after jobs were taken: %v, want 2 busy", got)
	}
	h.w.finishJobs("repo:acme/a")
	h.tick(poll, 1, "a")
	if got := h.byState("a"); got["cleaned"] != 2 || len(got) != 1 {
		t.Fatalf("after jobs finished: %v, want 2 cleaned", got)
	}
	want := []journal.State{journal.StatePlanned, journal.StateRegistered, journal.StateStarted, journal.StateBusy,
		journal.StateExited, journal.StateDeregistered, journal.StateCleaned}
	for _, at := range h.j.All() {
		if got := h.j.History(at.ID); !reflect.DeepEqual(got, want) {
			t.Errorf("%s went %v, want %v", at.ID, got, want)
		}
		if at.ExitCode == nil || *at.ExitCode != 0 {
			t.Errorf("%s exit code %v, want 0 from the shim", at.ID, at.ExitCode)
		}
		if !strings.HasPrefix(at.Policy, "repo:acme/a ") || at.RuntimeDir != "/run/rm/"+at.ID {
			t.Errorf("%s policy %q dir %q", at.ID, at.Policy, at.RuntimeDir)
		}
	}
	h.mu.Lock()
	points := slices.Clone(h.crash)
	h.mu.Unlock()
	for _, p := range []CrashPoint{CrashAfterPlan, CrashAfterJIT, CrashAfterRegistered, CrashAfterStart, CrashAfterStarted,
		CrashAfterBusy, CrashAfterExit, CrashAfterDeregister, CrashMidClean} {
		if !slices.Contains(points, p) {
			t.Errorf("crash point %s never reached (got %v)", p, points)
		}
	}
	h.w.checkPromises()

	st := h.s.Status()
	if len(st.Targets) != 1 || st.Targets[0].Name != "a" || st.Targets[0].Owned != 0 || st.Generation != 1 {
		t.Fatalf("status = %+v", st)
	}
	for _, ev := range st.Events {
		if strings.Contains(ev.Message, "SECRET") {
			t.Fatalf("event leaks the JIT config: %+v", ev)
		}
	}
}

func TestIdleRunnersReapedAfterIdleTimeoutKeepingMinIdle(t *testing.T) {
	h, a := startAWith(t, 2, func(a *config.Target) {
		a.MinIdle = 1
		a.IdleTimeout = 0
	})
	if got := h.byState("a"); got["started"] != 3 {
		t.Fatalf("demand 2 + min_idle 1: %v, want 3 started", got)
	}
	// The queue empties without any job being taken (cancelled runs): two runners are surplus.
	h.w.setQueued("repo:acme/a", 0)
	a.IdleTimeout = 5 * 60 * 1e9
	h.apply(cfgOf(a))
	h.waitPass("a", 1)
	h.settle(1)
	if got := h.byState("a"); got["started"] != 3 {
		t.Fatalf("before idle_timeout nothing is reaped: %v", got)
	}
	h.tick(6*time.Minute, 1, "a")
	if got := h.byState("a"); got["started"] != 1 || got["deregistered"] != 2 {
		t.Fatalf("after idle_timeout: %v, want 1 started (min_idle), 2 deregistered", got)
	}
	h.tick(poll, 1, "a") // reaped processes were stopped; the next pass concludes them
	if got := h.byState("a"); got["cleaned"] != 2 || got["started"] != 1 {
		t.Fatalf("after conclusion: %v", got)
	}
	h.w.checkPromises()
}

func TestReapRaceWithJobLeavesBusyRunner(t *testing.T) {
	h, _ := startAWith(t, 1, func(a *config.Target) { a.IdleTimeout = 60 * 1e9 })
	h.w.setQueued("repo:acme/a", 0)
	// GitHub hands it a job between our list and our delete: the delete answers busy.
	h.w.takeJobsUnseen()
	h.tick(2*time.Minute, 1, "a")
	if got := h.byState("a"); got["busy"] != 1 {
		t.Fatalf("a runner that took a job while being reaped must be left busy: %v", got)
	}
	if alive, _ := h.w.counts("repo:acme/a"); alive != 1 {
		t.Fatalf("busy runner process alive = %d", alive)
	}
	h.w.checkPromises()
}

// TestWorkDirIsPerAttemptUnlessShared: with work_dir each runner gets <work_dir>/<attempt id>
// (journaled, given to GitHub and the shim) and it is removed after the runtime directory; with
// shared_work_dir every runner gets work_dir itself and it is never removed.
func TestWorkDirIsPerAttemptUnlessShared(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "per attempt", true: "shared"}[shared], func(t *testing.T) {
			h := newHarness(t)
			a := baseTarget("a")
			a.WorkDir, a.SharedWorkDir = "/srv/work", shared
			h.w.setQueued("repo:acme/a", 2)
			h.begin(cfgOf(a))
			var want []string
			for _, at := range h.j.All() {
				switch {
				case shared && at.WorkDir != "":
					t.Errorf("%s journaled work dir %q for a shared work_dir", at.ID, at.WorkDir)
				case !shared && at.WorkDir != "/srv/work/"+at.ID:
					t.Errorf("%s journaled work dir %q, want /srv/work/%s", at.ID, at.WorkDir, at.ID)
				}
				want = append(want, "/srv/work/"+at.ID)
			}
			if shared {
				want = []string{"/srv/work"}
			}
			slices.Sort(want)
			if got := h.w.workDirs(); !slices.Equal(got, want) {
				t.Fatalf("work directories given to the runners: %v, want %v", got, want)
			}
			h.runJobsOfA()
			if got := h.byState("a"); got["cleaned"] != 2 {
				t.Fatalf("after the jobs: %v, want 2 cleaned", got)
			}
			left := h.w.workDirs()
			if shared && !slices.Equal(left, []string{"/srv/work"}) || !shared && len(left) != 0 {
				t.Errorf("work directories left after cleanup: %v", left)
			}
			h.w.checkPromises()
		})
	}
}
