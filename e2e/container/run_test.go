//go:build e2e

package container

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// TestJobRunsInAContainer: a queued job is run by a runner in a container of its own, created
// with the target's image as a slot's uid, labelled with host, attempt and target; the container
// is removed after its one job (issue 27 items 1, 3, 6).
func TestJobRunsInAContainer(t *testing.T) {
	w := newWorld(t, 1, nil)
	d := w.start()
	id, err := w.sim.QueueJobSpec(ghsim.JobSpec{Repo: repo, Labels: labels, Command: `echo "UID $(id -u)"; echo "MOUNT $(cat /proc/self/mountinfo | grep -c actions-runner)"; sleep 2`})
	if err != nil {
		t.Fatal(err)
	}
	w.sim.WaitJobStatus(t, 90*time.Second, id, ghsim.StatusInProgress)
	in := w.containers()
	if len(in) == 0 || !strings.Contains(strings.Join(in, " "), "running") {
		t.Fatalf("a job is in progress, and the dockerd holds %v: want its runner's container running", in)
	}
	w.sim.WaitJobsDone(t, 90*time.Second, id)
	res, ok := w.sim.CommandResult(id)
	if !ok || res.ExitCode != 0 {
		t.Fatalf("job result %+v (%v)", res, ok)
	}
	if strings.Contains(res.Stdout, "UID 0\n") || !strings.Contains(res.Stdout, "UID ") {
		t.Errorf("the job ran as %q, want a slot's non-root uid", res.Stdout)
	}
	if !strings.Contains(res.Stdout, "MOUNT 1") {
		t.Errorf("the job does not see its runner mounted at /actions-runner: %q", res.Stdout)
	}
	w.waitNoContainers(30 * time.Second)
	w.stopClean(d)
}
