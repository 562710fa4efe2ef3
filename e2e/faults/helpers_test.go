//go:build e2e

package faults

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/status"
)

// Bounds shared by the tests. The harness config polls every 1 s and drains for at most 10 s.
const (
	jobTimeout = 60 * time.Second // a queued job, on a healthy path, runs and completes
	stopSlack  = 2 * time.Second  // allowed beyond shutdown_drain_timeout for a stop to end (docs/engine.md, Drains)
	labelE2E   = "e2e"
)

var e2eLabels = []string{labelE2E}

type startKey struct{}

func withStart(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, startKey{}, t)
}

func startOf(r interface{ Context() context.Context }) time.Time {
	t, _ := r.Context().Value(startKey{}).(time.Time)
	return t
}

// token is the secret the harness wrote into the simulator's token file.
func token(t testing.TB, sim *harness.Sim) string {
	t.Helper()
	data, err := os.ReadFile(sim.TokenFile)
	if err != nil {
		t.Fatalf("read the token file: %v", err)
	}
	return strings.TrimSpace(string(data))
}

// targetStatus returns the status of target name, failing the test if the daemon lists none.
func targetStatus(t testing.TB, snap status.Snapshot, name string) status.Target {
	t.Helper()
	for _, ts := range snap.Targets {
		if ts.Name == name {
			return ts
		}
	}
	t.Fatalf("status lists no target %q: %+v", name, snap.Targets)
	return status.Target{}
}

// waitTarget polls the daemon's status until cond accepts target name's entry and returns it.
func waitTarget(t testing.TB, d *harness.Daemon, name string, timeout time.Duration, what string, cond func(status.Target) bool) status.Target {
	t.Helper()
	var last status.Target
	harness.Eventually(t, timeout, "target "+name+": "+what, func() bool {
		if d.Exited() {
			t.Fatalf("the daemon exited while waiting for target %s: %s:\n%s", name, what, d.Stderr())
		}
		last = targetStatus(t, d.Status(t), name)
		return cond(last)
	})
	return last
}

// backingOff matches a target whose loop backs off with error class.
func backingOff(class string) func(status.Target) bool {
	return func(ts status.Target) bool { return ts.Backoff.Active && ts.Backoff.Reason == class }
}

// healthy matches a target that is not backing off and has finished a pass.
func healthy(ts status.Target) bool { return !ts.Backoff.Active && !ts.LastPass.IsZero() }

// stopWithin sends SIGTERM and asserts the daemon ends, with exit code 0, within bound.
func stopWithin(t testing.TB, d *harness.Daemon, bound time.Duration) string {
	t.Helper()
	start := time.Now()
	d.Signal(syscall.SIGTERM)
	code, out := d.Wait(t, bound+30*time.Second)
	if took := time.Since(start); took > bound {
		t.Errorf("SIGTERM took %s to end the daemon; the bound is %s (promise 5)", took.Round(time.Millisecond), bound)
	}
	if code != 0 {
		t.Errorf("daemon exited %d after SIGTERM; stdout:\n%s", code, out)
	}
	if !strings.Contains(out, "daemon stopped") {
		t.Errorf("daemon did not report its stop on stdout:\n%s", out)
	}
	return out
}

// stopClean ends a test: no busy runner was killed, SIGTERM ends the daemon within bound, and
// nothing leaked (promises 1, 5 and 2).
func stopClean(t testing.TB, sim *harness.Sim, d *harness.Daemon, bound time.Duration) {
	t.Helper()
	harness.AssertNoBusyKilled(t, sim, d.StateDir)
	stopWithin(t, d, bound)
	harness.AssertNoLeaks(t, sim, d.StateDir)
}

// drainBound is how long a stop of cfg's daemon may take.
func drainBound(cfg *harness.Config) time.Duration {
	return cfg.File.Daemon.ShutdownDrainTimeout.D() + stopSlack
}

// queueAll queues n jobs of duration in repo and returns their ids.
func queueAll(t testing.TB, sim *harness.Sim, repo string, n int, duration time.Duration) []int64 {
	t.Helper()
	ids := make([]int64, 0, n)
	for range n {
		ids = append(ids, sim.MustQueue(t, repo, e2eLabels, duration))
	}
	return ids
}

// pickupLatency is how long job id waited between being queued and being taken by a runner.
func pickupLatency(t testing.TB, sim *harness.Sim, id int64) time.Duration {
	t.Helper()
	j := sim.MustJob(t, id)
	if j.StartedAt.IsZero() {
		t.Fatalf("job %d has not started (%s)", id, j.Status)
	}
	return j.StartedAt.Sub(j.CreatedAt)
}

// removedRegistrations reports whether every registration ever made in scope has been removed.
func unremovedRegistrations(sim *harness.Sim, scope string) []ghsim.Registration {
	var out []ghsim.Registration
	for _, r := range sim.RegistrationsOf(scope) {
		if r.RemovedAt.IsZero() {
			out = append(out, r)
		}
	}
	return out
}
