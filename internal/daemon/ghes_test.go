package daemon

import (
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/status"
)

// TestGHESRunsJobsUnderAPIv3: against a simulated GitHub Enterprise Server (REST only under
// /api/v3, GHES's scale-set message flow), the daemon with api_url = <host>/api/v3 runs a polled
// job, then, reloaded to a scale-set target, bootstraps its set (registration token and
// runner-registration under /api/v3) and runs a job GitHub assigned to it; no call misses the
// API path.
func TestGHESRunsJobsUnderAPIv3(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, ghsim.Options{GHES: true})
	e.start()
	e.runJob()

	e.writeConfig(scaleSetTarget)
	e.waitStatus("the scale-set session open", func(s status.Snapshot) bool {
		ss := target(s).ScaleSet
		return ss != nil && ss.Session == "open" && ss.ID != 0
	})
	e.runJobWith("web-set")
	for route, n := range e.srv.Requests() {
		if strings.Contains(route, "(outside /api/v3)") {
			t.Errorf("%d requests outside /api/v3 (%s); the daemon's GHES mode must keep the API path", n, route)
		}
	}
	if n := e.srv.ActionsCalls(); len(n) == 0 {
		t.Error("no Actions-service call: the scale-set bootstrap did not reach the service")
	}
}
