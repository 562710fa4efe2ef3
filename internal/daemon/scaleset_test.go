package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/livetest"
	"github.com/runner-manager/runner-manager/internal/status"
)

// scaleSetTarget is target web taking its demand from scale set web-set of acme/web.
const scaleSetTarget = `
[[target]]
name = "web"
repository = "acme/web"
scale_set = "web-set"
max_runners = 2
`

// TestScaleSetTargetServesJobsFromTheQueue: a scale-set target creates its set, opens a session,
// serves the jobs GitHub assigns to it with runners registered through the set's JIT endpoint, and
// never polls the REST API for jobs or runners; the Actions-service tokens stay on its host, and
// stopping the daemon deletes the session while a long poll is in flight (the simulator's lasts 50 s).
func TestScaleSetTargetServesJobsFromTheQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.writeConfig(scaleSetTarget)
	stop := e.startStoppable()
	e.waitStatus("the scale-set session open", func(s status.Snapshot) bool {
		ss := target(s).ScaleSet
		return ss != nil && ss.Session == "open" && ss.ID != 0
	})
	sets := e.srv.ScaleSets()
	if len(sets) != 1 || sets[0].Name != "web-set" || sets[0].Session == "" {
		t.Fatalf("scale sets %+v, want web-set with a session", sets)
	}
	var ids []int64
	for range 2 {
		id, err := e.srv.QueueJob("acme/web", []string{"web-set"}, -1)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	e.waitStatus("two runners busy", func(s status.Snapshot) bool { return target(s).Busy == 2 })
	fams := e.scrape()
	if v, ok := sample(fams, "runner_manager_scaleset_session_open", map[string]string{"target": "web"}); !ok || v != 1 {
		t.Errorf("runner_manager_scaleset_session_open{target=web} = %v (found %v), want 1", v, ok)
	}
	if v, ok := sample(fams, "runner_manager_scaleset_jobs", map[string]string{"target": "web", "state": "assigned"}); !ok || v != 2 {
		t.Errorf("runner_manager_scaleset_jobs{state=assigned} = %v (found %v), want 2", v, ok)
	}
	for _, id := range ids {
		if err := e.srv.FinishJob(id, "success", false); err != nil {
			t.Fatal(err)
		}
	}
	e.waitStatus("the runners concluded", func(s status.Snapshot) bool { return target(s).Owned == 0 && len(s.Runners) == 0 })

	for route, n := range e.srv.Requests() {
		if strings.Contains(route, "/actions/runs") || strings.Contains(route, "/actions/jobs") ||
			strings.HasSuffix(route, "/actions/runners") || strings.Contains(route, "/actions/runners/{") ||
			strings.Contains(route, "generate-jitconfig") {
			t.Errorf("REST %s called %d times for a scale-set target", route, n)
		}
	}
	calls := e.srv.ActionsCalls()
	jit := 0
	for route, n := range calls {
		if strings.Contains(route, "generatejitconfig") {
			jit += n
		}
	}
	if jit != 2 {
		t.Errorf("scale-set JIT calls %d, want 2 (one per job): %v", jit, calls)
	}
	if leaks := e.srv.CredentialLeaks(); len(leaks) != 0 {
		t.Errorf("credentials sent to the wrong host: %v", leaks)
	}
	for _, j := range e.srv.Jobs() {
		if j.Status != "completed" {
			t.Errorf("job %d is %s, want completed", j.ID, j.Status)
		}
	}

	stop()
	if got := e.srv.ScaleSets()[0]; got.Session != "" || got.Polling {
		t.Errorf("after shutdown the set still has session %q (polling %v); want it deleted", got.Session, got.Polling)
	}
	for _, r := range e.srv.Registrations() {
		if r.RemovedAt.IsZero() {
			t.Errorf("registration left: %+v", r)
		}
	}
}

// TestPacerCostsNoScaleSetPasses: a scale-set target's passes make no REST call, so the poll plan
// gives them no points and they never stretch the polled targets' intervals.
func TestPacerCostsNoScaleSetPasses(t *testing.T) {
	polled := config.Target{Name: "web", Repository: "acme/web", MaxRunners: 1}
	set := config.Target{Name: "set", Repository: "acme/web", ScaleSet: "web-set", MaxRunners: 1}
	alone := planFor(&config.Config{Targets: []config.Target{polled}}, config.DefaultAccount, nil)
	both := planFor(&config.Config{Targets: []config.Target{polled, set}}, config.DefaultAccount, nil)
	if both.Need != alone.Need || both.Need == 0 {
		t.Fatalf("points needed with a scale-set target %d, without %d; want equal and non-zero", both.Need, alone.Need)
	}
}

// TestScaleSetReload: a changed runner_group moves the set (PATCH, not a second set); removing the
// target closes its session and keeps the set, unless delete_scale_set_on_remove says otherwise.
func TestScaleSetReload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	builders := e.srv.CreateRunnerGroup("acme", "builders")
	orgTarget := func(extra string) string {
		return "\n[[target]]\nname = \"org\"\norganization = \"acme\"\nscale_set = \"org-set\"\nmax_runners = 1\n" + extra
	}
	sets := func() []ghsim.ScaleSet { return e.srv.ScaleSets() }
	waitSets := func(what string, cond func([]ghsim.ScaleSet) bool) {
		t.Helper()
		// the simulator's state, changed by a real daemon
		if err := livetest.Poll(waitLimit, 50*time.Millisecond, func() bool { return cond(sets()) }); err != nil {
			t.Fatalf("%v waiting for %s; scale sets %+v", err, what, sets())
		}
	}
	e.writeConfig(orgTarget(""))
	e.start()
	waitSets("the set with a session", func(s []ghsim.ScaleSet) bool { return len(s) == 1 && s[0].Session != "" && s[0].GroupID == 1 })
	id := sets()[0].ID

	e.writeConfig(orgTarget("runner_group = \"builders\"\n"))
	waitSets("the set moved to builders", func(s []ghsim.ScaleSet) bool {
		return len(s) == 1 && s[0].ID == id && s[0].GroupID == builders && s[0].Session != ""
	})

	e.writeConfig(webTarget(1))
	waitSets("the session closed, the set kept", func(s []ghsim.ScaleSet) bool { return len(s) == 1 && s[0].Session == "" })

	e.writeConfig(orgTarget("runner_group = \"builders\"\ndelete_scale_set_on_remove = true\n"))
	waitSets("a session again", func(s []ghsim.ScaleSet) bool { return len(s) == 1 && s[0].ID == id && s[0].Session != "" })
	e.writeConfig(webTarget(1))
	waitSets("the set deleted", func(s []ghsim.ScaleSet) bool { return len(s) == 0 })
}
