//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
)

const (
	// endTimeout covers a stop for cause, the kill 15 s later (engine killGrace) and the conclusion.
	endTimeout = 45 * time.Second
	// ghostTimeout covers finding a ghost: a busy target reads the runner list every 5th pass
	// (engine listEvery), its passes as far apart as the idle poll interval (4 s here) when its
	// job reads answer 304, and then the grace (startup_timeout).
	ghostTimeout = 60 * time.Second
)

// ended waits for attempt's runner to be ended for reason: the failed record naming it (also in
// status's events), then no process of it alive and its attempt concluded. It returns the failed
// record.
func ended(t *testing.T, d *harness.Daemon, mark harness.LogMark, cfg *harness.Config, reason string, within time.Duration) harness.LogLine {
	t.Helper()
	failed := d.WaitRecord(t, mark, within, "a runner ended for "+reason, func(l harness.LogLine) bool {
		return l.Kind == "failed" && strings.HasPrefix(l.Msg, reason+": ")
	})
	d.WaitRecord(t, mark, endTimeout, "the ended runner cleaned up", func(l harness.LogLine) bool {
		return l.Kind == "cleaned" && l.Attempt == failed.Attempt
	})
	if live, err := harness.LiveAttempts(cfg.StateDir); err != nil || live[failed.Attempt] {
		t.Fatalf("a process of %s is alive after it was cleaned (err %v)", failed.Attempt, err)
	}
	seen := false
	for _, ev := range d.Status(t).Events {
		seen = seen || ev.Kind == "failed" && ev.Attempt == failed.Attempt && strings.HasPrefix(ev.Message, reason+": ")
	}
	if !seen {
		t.Errorf("status shows no failed event for %s naming %s", failed.Attempt, reason)
	}
	return failed
}

// TestHungJobEndedAtMaxJobDuration is issue 30 item 1 on the real binary: a runner whose job
// hangs (it ignores SIGTERM) is recorded failed at max_job_duration, killed 15 s after its stop,
// and cleaned up; its slot serves the next job. GitHub's side of the killed job (it fails the job
// of a runner that lost communication, and removes the registration) is played by FinishJob.
func TestHungJobEndedAtMaxJobDuration(t *testing.T) {
	t.Parallel()
	const bound = 3 * time.Second
	sim, cfg := simWithA(t, 1, func(a *config.Target) { // one slot: the next job needs the hung one's
		a.MaxJobDuration = harness.Duration(bound)
	})
	d := harness.StartDaemon(t, cfg.Write(t))
	mark := d.Mark()
	hung, err := sim.QueueJobSpec(ghsim.JobSpec{Repo: "acme/a", Labels: labels, Duration: time.Second, Fault: runnerproto.FaultHang})
	if err != nil {
		t.Fatal(err)
	}
	sim.WaitJobStatus(t, eventTimeout, hung, ghsim.StatusInProgress)
	took := time.Now()
	failed := ended(t, d, mark, cfg, "max_job_duration", eventTimeout)
	if waited := time.Since(took); waited < bound {
		t.Errorf("ended %s after it took its job, before max_job_duration %s", waited, bound)
	}
	d.WaitRecord(t, mark, time.Second, "the kill of the runner that ignored its stop", func(l harness.LogLine) bool {
		return l.Attempt == failed.Attempt && strings.Contains(l.Msg, "killed")
	})
	if err := sim.FinishJob(hung, "failure", true); err != nil { // GitHub gives up on the lost runner
		t.Fatal(err)
	}
	next := sim.MustQueue(t, "acme/a", labels, time.Second)
	sim.WaitJobsDone(t, jobsTimeout, next)
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir, hung)
	stopWithinBound(t, d, sim, cfg)
}

// TestGhostRunnersAreEnded is issue 30 item 2 on the real binary: a runner that keeps running
// after its job completed (GitHub removed it) and a busy runner whose registration was deleted
// under it are both stopped startup_timeout after GitHub stopped listing them, the second (busy,
// so deaf to SIGTERM) by a kill, and cleaned up.
func TestGhostRunnersAreEnded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		spec  ghsim.JobSpec
		after func(t *testing.T, sim *harness.Sim, job ghsim.Job)
	}{
		{"runs on after its job", ghsim.JobSpec{Duration: 4 * time.Second, Fault: runnerproto.FaultLingerAfterJob}, // long enough to be seen busy
			func(t *testing.T, sim *harness.Sim, job ghsim.Job) {
				sim.WaitJobsDone(t, jobsTimeout, job.ID)
			}},
		{"registration deleted under it", ghsim.JobSpec{Duration: -1},
			func(t *testing.T, sim *harness.Sim, job ghsim.Job) {
				if err := sim.RemoveRunner(job.RunnerName); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sim, cfg := simWithA(t, 1, func(a *config.Target) {
				a.StartupTimeout = harness.Duration(5 * time.Second) // the ghost's grace
			})
			d := harness.StartDaemon(t, cfg.Write(t))
			mark := d.Mark()
			spec := tc.spec
			spec.Repo, spec.Labels = "acme/a", labels
			id, err := sim.QueueJobSpec(spec)
			if err != nil {
				t.Fatal(err)
			}
			job := sim.WaitJobStatus(t, eventTimeout, id, ghsim.StatusInProgress)
			d.WaitRecord(t, mark, eventTimeout, "the runner busy", func(l harness.LogLine) bool {
				return l.Kind == "busy" && harness.RunnerPrefix+l.Attempt == job.RunnerName
			})
			tc.after(t, sim, job)
			forgotten := time.Now()
			failed := ended(t, d, mark, cfg, "ghost", ghostTimeout)
			if harness.RunnerPrefix+failed.Attempt != job.RunnerName {
				t.Fatalf("ended %s, want the ghost %s", failed.Attempt, job.RunnerName)
			}
			if waited := time.Since(forgotten); waited < 5*time.Second-time.Second {
				t.Errorf("ended %s after GitHub forgot it, before the grace (startup_timeout 5s)", waited)
			}
			_ = sim.FinishJob(id, "failure", true) // GitHub gives up on the job of a removed runner
			stopWithinBound(t, d, sim, cfg)
		})
	}
}
