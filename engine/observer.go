package engine

import (
	"context"
	"errors"
	"maps"
	"sort"
	"time"

	"github.com/runner-manager/runner-manager/journal"
)

// Observer is told what the target loops do, for metrics. Its method set is exactly the one
// *metrics.Metrics has, so the daemon passes its metrics as Deps.Observer; the engine never imports
// internal/metrics. Methods are called from loop goroutines (and under the supervisor's lock when
// a loop retires), so they must be fast, safe for concurrent use and never call the Supervisor.
//
// The contract, per target name (the label every series carries):
//   - ObserveReconcile: once per pass, with its duration on the engine's clock and the error it
//     ended with (nil for a healthy pass). A pass cut short by a stop is not reported.
//   - SetRunners: after every pass whose journal read succeeded, the target's live attempts per
//     journal state (every identity of the name, so a re-pointed target draining its old loop
//     reports one total). A state that emptied is simply absent; the observer zeroes it.
//   - JobPickedUp: once per attempt, when the engine records it busy (started -> busy). A job that
//     starts and finishes between two passes is never seen busy and so is not counted.
//   - ObserveScaleUp with the Stage* names below (equal to internal/metrics' Stage* constants;
//     internal/daemon's tests pin that).
//   - When the last loop of a target ends and the target is no longer enabled in the config, the
//     observer's ForgetTarget(target string) is called if it has one (metrics drops the target's
//     series); otherwise it gets a final SetRunners with no states.
type Observer interface {
	ObserveReconcile(target string, d time.Duration, err error)
	JobPickedUp(target string)
	ObserveScaleUp(target, stage string, d time.Duration)
	SetRunners(target string, counts map[string]int)
}

// Scale-up stages passed to Observer.ObserveScaleUp.
//
// queued_to_started runs from the job's queued time (Job.QueuedAt, GitHub's created_at) to the
// journal's record of the runner's process start. Each runner a pass launches is matched with one
// queued job the pass launched for, oldest first, after skipping as many of the oldest jobs as there
// are runners already starting or idle (they will take those). A runner launched for min_idle, with
// no job left to match, is not observed. started_to_in_progress runs from that start record to the
// pass that sees the runner busy (so it includes up to one poll interval of detection delay), and
// queued_to_in_progress is their sum for the same job; it is only observed for runners this process
// launched (the queued time is not journaled, so a runner adopted after a restart has none).
const (
	StageQueuedToStarted     = "queued_to_started"
	StageStartedToInProgress = "started_to_in_progress"
	StageQueuedToInProgress  = "queued_to_in_progress"
)

// Runner failure reasons: the `reason` of RunnerFailureObserver and the prefix of the journal
// Reason of an attempt failed for it.
const (
	// ReasonRegistrationTimedOut: GitHub did not list the runner online (or busy) within the
	// target's startup_timeout of its start, or listed it offline that long while idle, or its
	// package and process did not start within it.
	ReasonRegistrationTimedOut = "registration_timed_out"
	// ReasonLaunchFailed: registration, runner package or process start failed.
	ReasonLaunchFailed = "launch_failed"
	// ReasonOutOfMemory: the runner's job went past memory_max and the kernel killed a process
	// of it inside the runner's cgroup (the runner ends; its attempt is concluded as exited).
	ReasonOutOfMemory = "out_of_memory"
	// ReasonMaxJobDuration: busy for longer than the target's max_job_duration; stopped (killed
	// if it ignored the stop), deregistered and cleaned up (ends.go).
	ReasonMaxJobDuration = "max_job_duration"
	// ReasonGhost: alive while GitHub said its job completed or no longer listed it, for longer
	// than the target's startup_timeout; stopped and cleaned up (ends.go).
	ReasonGhost = "ghost"
	// ReasonImageMissing: a container runner's image is not on the host and could not be pulled.
	ReasonImageMissing = "image_missing"
	// ReasonContainerRuntimeUnavailable: the Docker Engine (daemon.docker_host) did not answer.
	ReasonContainerRuntimeUnavailable = "container_runtime_unavailable"
	// ReasonRunnerDependencyMissing: the runner cannot start in its container's image.
	ReasonRunnerDependencyMissing = "runner_dependency_missing"
)

// RunnerFailureObserver is the optional Observer extension told of every runner given up on
// (*metrics.Metrics has it: runner_manager_runner_failures_total).
type RunnerFailureObserver interface{ RunnerFailed(target, reason string) }

// runnerFailed reports a runner given up on to the observer, if it listens, and to status.
func (l *loop) runnerFailed(reason string) {
	if f, ok := l.sup.deps.Observer.(RunnerFailureObserver); ok {
		f.RunnerFailed(l.key.name, reason)
	}
	l.status.set(func(st *TargetStatus) {
		if st.Failures == nil {
			st.Failures = map[string]int{}
		}
		st.Failures[reason]++
	})
}

// targetForgetter is the optional Observer extension called when a target's last loop ends.
type targetForgetter interface{ ForgetTarget(target string) }

type nopObserver struct{}

func (nopObserver) ObserveReconcile(string, time.Duration, error) {}
func (nopObserver) JobPickedUp(string)                            {}
func (nopObserver) ObserveScaleUp(string, string, time.Duration)  {}
func (nopObserver) SetRunners(string, map[string]int)             {}

// observer is Deps.Observer, or one that ignores everything when none was given.
func (s *Supervisor) observer() Observer {
	if s.deps.Observer == nil {
		return nopObserver{}
	}
	return s.deps.Observer
}

// observePass reports one finished pass; a pass that a stop cut short says nothing about GitHub
// or the host, so it is not counted as an error.
func (l *loop) observePass(start time.Time, passErr error) {
	if errors.Is(passErr, context.Canceled) {
		return
	}
	l.sup.observer().ObserveReconcile(l.key.name, l.sup.clock.Now().Sub(start), passErr)
}

// observeRunners reports the target's live attempts by state and forgets the queued times of
// attempts that left started without going busy (failed, reaped, exited).
func (l *loop) observeRunners(live []journal.Attempt) {
	counts := map[string]int{}
	started, owned := map[string]bool{}, map[string]bool{}
	for _, a := range live {
		if a.Target != l.key.name {
			continue
		}
		owned[a.ID] = true
		counts[string(a.State)]++
		if a.State == journal.StateStarted {
			started[a.ID] = true
		}
	}
	maps.DeleteFunc(l.queuedAt, func(id string, _ time.Time) bool { return !started[id] })
	maps.DeleteFunc(l.online, func(id string, _ time.Time) bool { return !started[id] })
	maps.DeleteFunc(l.launched, func(id string, _ bool) bool { return !owned[id] })
	maps.DeleteFunc(l.finished, func(id string, _ bool) bool { return !owned[id] })
	l.sup.observer().SetRunners(l.key.name, counts)
}

// jobWaits returns, oldest first, the queued times of the jobs the runners launched this pass are
// for: the jobs left once the oldest `covered` ones are left to runners already starting or idle.
// Jobs without a queued time are skipped.
func jobWaits(jobs []Job, covered int) []time.Time {
	var at []time.Time
	for _, j := range jobs {
		if !j.QueuedAt.IsZero() {
			at = append(at, j.QueuedAt)
		}
	}
	sort.Slice(at, func(i, k int) bool { return at[i].Before(at[k]) })
	if covered >= len(at) {
		return nil
	}
	return at[max(covered, 0):]
}

// observeStarted records queued -> started for a runner launched for a job queued at queuedAt
// (zero: launched for min_idle) and keeps the queued time for the busy stage.
func (l *loop) observeStarted(a journal.Attempt, queuedAt time.Time) {
	if queuedAt.IsZero() {
		return
	}
	l.queuedAt[a.ID] = queuedAt
	l.sup.observer().ObserveScaleUp(l.key.name, StageQueuedToStarted, a.UpdatedAt.Sub(queuedAt))
}

// observeBusy records that started attempt a took a job, seen at now.
func (l *loop) observeBusy(a journal.Attempt, now time.Time) {
	o := l.sup.observer()
	o.JobPickedUp(l.key.name)
	if a.State == journal.StateStarted && !a.UpdatedAt.IsZero() {
		o.ObserveScaleUp(l.key.name, StageStartedToInProgress, now.Sub(a.UpdatedAt))
	}
	if q, ok := l.queuedAt[a.ID]; ok {
		o.ObserveScaleUp(l.key.name, StageQueuedToInProgress, now.Sub(q))
		delete(l.queuedAt, a.ID)
	}
}

// retiredLocked runs under s.mu once loop name's key was removed: when no loop of that name is
// left and the config no longer enables it, its series are dropped (or zeroed).
func (s *Supervisor) retiredLocked(name string) {
	if s.hasLoopLocked(name) {
		return
	}
	if cfg := s.config(); cfg != nil {
		if t, ok := cfg.Target(name); ok && t.IsEnabled() {
			return // a shutdown drain: the target is still wanted, its series stay
		}
	}
	if f, ok := s.deps.Observer.(targetForgetter); ok {
		f.ForgetTarget(name)
		return
	}
	s.observer().SetRunners(name, map[string]int{})
}
