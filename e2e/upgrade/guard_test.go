//go:build e2e

package upgrade

import (
	"testing"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/selfupdate"
)

// msgGuardBlind is what internal/daemon logs when the crash-loop guard cannot record a start.
const msgGuardBlind = "self-update: cannot record this start; the crash-loop guard is blind"

// TestGuardRecordsFirstStart: the very first start of a daemon with self-update on, on a host
// whose state directory does not exist yet (run by hand, not through `service install`), must be
// recorded like any other, or a crash-looping binary on that host is never rolled back (issue 7,
// deliverable 3).
func TestGuardRecordsFirstStart(t *testing.T) {
	t.Parallel()
	oldBin, _ := binaries(t)
	_, cfg := simAndConfig(t)
	h := handHost(t, oldBin)

	d := startService(t, h.private, cfg, h.source)
	if l := d.findMsg(0, msgGuardBlind); l.Raw != "" {
		t.Errorf("the first start on a fresh state directory was not recorded by the crash-loop guard:\n%s", l.Raw)
	}
	if st := guardState(t, cfg); st.Version != oldVersion || !st.Running {
		t.Errorf("guard record while the first start runs: %+v; want version %s, running", st, oldVersion)
	}
	if code := d.stop(t); code != 0 {
		t.Fatalf("the daemon exited %d on SIGTERM; want 0", code)
	}
	if st := guardState(t, cfg); st.Running || st.FailedStarts != 0 {
		t.Errorf("guard record after a clean stop: %+v; want not running, no failed start", st)
	}
}

func guardState(t testing.TB, cfg *harness.Config) selfupdate.GuardState {
	t.Helper()
	st, err := selfupdate.ReadGuardState(cfg.StateDir)
	if err != nil {
		t.Fatalf("read the crash-loop guard's record: %v", err)
	}
	return st
}
