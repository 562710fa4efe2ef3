//go:build e2e

package container

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/engine"
)

// crashEnv is the daemon's fault-injection switch (cmd/runner-manager/crashhook.go).
const crashEnv = "RUNNER_MANAGER_TEST_CRASH_AT"

// TestContainerCrashPoints kills the daemon (SIGKILL, by its own crash hook) between every two
// steps of a container runner's life: before create (registered), created not started, running
// before and after its started record, running a job, exited not removed, deregistered, mid-clean.
// The next daemon on the same state directory runs every job and leaves 0 containers and 0
// registrations: running ones adopted, the rest removed (issue 27 items 2 and 6).
func TestContainerCrashPoints(t *testing.T) {
	e := newEngine(t)
	for _, cp := range []struct {
		point engine.CrashPoint
		job   time.Duration
		left  string // a container state the kill must leave ("": none needed)
	}{
		{engine.CrashAfterRegistered, 2 * time.Second, ""},
		{engine.CrashAfterContainerCreated, 2 * time.Second, " created "},
		{engine.CrashAfterStart, 2 * time.Second, " running "},
		{engine.CrashAfterStarted, 2 * time.Second, " running "},
		// A runner is journaled busy only when a pass sees it running a job: the job must outlast a pass.
		{engine.CrashAfterBusy, 4 * time.Second, " running "},
		{engine.CrashAfterExit, 2 * time.Second, " exited "},
		{engine.CrashAfterDeregister, 2 * time.Second, " exited "},
		{engine.CrashMidClean, 2 * time.Second, ""},
	} {
		t.Run(string(cp.point), func(t *testing.T) {
			w := e.world(t, 2, nil)
			d := w.start(crashEnv + "=" + string(cp.point))
			var jobs []int64
			for range 2 {
				jobs = append(jobs, w.sim.MustQueue(t, repo, labels, cp.job))
			}
			if code, out := d.Wait(t, 90*time.Second); code != -1 || strings.Contains(out, "daemon stopped") {
				t.Fatalf("the daemon exited %d, want killed at %s; stdout:\n%s", code, cp.point, out)
			}
			at := w.containers()
			t.Logf("at the kill: %v", at)
			if !strings.Contains(" "+strings.Join(at, " ")+" ", cp.left) {
				t.Fatalf("the kill at %s left containers %v, want one %q: the point is not where it is named", cp.point, at, strings.TrimSpace(cp.left))
			}
			d = w.start()
			w.sim.WaitJobsDone(t, 2*time.Minute, jobs...)
			w.waitNoContainers(time.Minute)
			w.stopClean(d)
			for _, id := range jobs {
				if j := w.sim.MustJob(t, id); j.Conclusion != "success" {
					t.Errorf("job %d concluded %q, want success: a busy runner was killed", id, j.Conclusion)
				}
			}
		})
	}
}

// TestStopLeavesBusyContainersRunning: a stop leaves a busy container running (its job
// finishes) and the next start adopts it; once its job ends it is removed (issue 27 item 2).
func TestStopLeavesBusyContainersRunning(t *testing.T) {
	w := newWorld(t, 1, nil)
	d := w.start()
	id := w.busyJob()
	d.Signal(15)
	if code, out := d.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("daemon exited %d after SIGTERM; stdout:\n%s", code, out)
	}
	if c := w.containers(); len(c) == 0 || !strings.Contains(strings.Join(c, " "), "running") {
		t.Fatalf("after the stop the dockerd holds %v: want the busy runner's container still running", c)
	}
	d = w.start()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(d.Stdout(), "supervising it again") {
		if time.Now().After(deadline) {
			t.Fatalf("the second daemon did not adopt the running container within 30s; containers %v", w.containers())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := w.sim.FinishJob(id, "success", false); err != nil {
		t.Fatal(err)
	}
	w.sim.WaitJobsDone(t, time.Minute, id)
	if j := w.sim.MustJob(t, id); j.Conclusion != "success" {
		t.Errorf("job concluded %q, want success", j.Conclusion)
	}
	w.waitNoContainers(time.Minute)
	w.stopClean(d)
}
