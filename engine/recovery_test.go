package engine

import (
	"errors"
	"testing"

	"github.com/runner-manager/runner-manager/journal"
)

func TestDecide(t *testing.T) {
	p := Process{PID: 42, StartTime: 7}
	alive := observation{Process: p, HasProcess: true, Alive: true, ListKnown: true}
	dead := observation{Process: p, HasProcess: true, Alive: false, ListKnown: true}
	exited := observation{Process: p, HasProcess: true, Exit: ExitStatus{Exited: true, Code: 0}, ListKnown: true}
	ending := exited // exit.json written, the shim not yet gone
	ending.Alive = true
	none := observation{ListKnown: true}
	settled := observation{ListKnown: true, Settled: true} // the lookup came a call timeout after the planned record
	endingSettled := ending
	endingSettled.Settled = true
	unknownList := observation{}
	listed := observation{ListKnown: true, Listed: true, ListedID: 9}
	busy := alive
	busy.Listed, busy.ListedBusy = true, true
	broken := observation{Err: errors.New("proc unreadable")}
	expired := alive
	expired.StartupExpired = true
	expiredBusy, expiredExited := busy, exited
	expiredBusy.StartupExpired, expiredExited.StartupExpired = true, true
	at := func(s journal.State) journal.Attempt {
		return journal.Attempt{ID: "h-1", State: s, RunnerName: "runner-manager-h-1"}
	}
	withID := func(a journal.Attempt) journal.Attempt { a.RunnerID = 9; return a }
	overrun, ghost, overrunExited := busy, alive, exited
	overrun.Overrun, ghost.Ghost, overrunExited.Overrun = true, true, true
	ghost.Listed = false // GitHub no longer lists it
	forCause := func(reason string) journal.Attempt {
		a := withID(at(journal.StateFailed))
		a.Reason = reason + ": runner runner-manager-h-1 ..."
		return a
	}
	killDue := busy
	killDue.KillDue = true
	endedBusy := exited // killed; GitHub still lists it busy until it fails the job
	endedBusy.Listed, endedBusy.ListedBusy, endedBusy.ListedID = true, true, 9
	ctr := func(s journal.State) journal.Attempt {
		a := withID(at(s))
		a.Container = a.RunnerName
		return a
	}
	cp := Process{PID: 42, StartTime: 7, Container: "runner-manager-h-1"}
	ctrAlive := observation{Process: cp, HasProcess: true, Alive: true, ListKnown: true}
	ctrExited := observation{Process: cp, HasProcess: true, Exit: ExitStatus{Exited: true, Code: 137, OOMKilled: true}, ListKnown: true}

	tests := []struct {
		name string
		a    journal.Attempt
		o    observation
		want step
	}{
		{"planned, list unknown: wait", at(journal.StatePlanned), unknownList, stepWait},
		{"planned, registration found: drop it", at(journal.StatePlanned), listed, stepDrop},
		{"planned, nothing at GitHub after the call timeout: drop", at(journal.StatePlanned), settled, stepDrop},
		{"planned, nothing at GitHub yet, the request may be in flight: wait", at(journal.StatePlanned), none, stepWait},
		{"registered, shim alive: attach", withID(at(journal.StateRegistered)), alive, stepAttach},
		{"registered, no shim: deregister", withID(at(journal.StateRegistered)), none, stepDeregister},
		{"registered, shim ended: deregister", withID(at(journal.StateRegistered)), exited, stepDeregister},
		{"started, alive: keep", at(journal.StateStarted), alive, stepKeep},
		{"started, alive, list unknown: keep", at(journal.StateStarted), observation{Process: p, HasProcess: true, Alive: true}, stepKeep},
		{"started, busy at GitHub: mark busy", at(journal.StateStarted), busy, stepMarkBusy},
		{"started, a delivery said it took a job, list unknown: mark busy", at(journal.StateStarted), observation{Process: p, HasProcess: true, Alive: true, Told: true}, stepMarkBusy},
		{"started, a delivery said it took a job, then it ended: mark exited", at(journal.StateStarted), observation{Process: p, HasProcess: true, Exit: ExitStatus{Exited: true}, Told: true}, stepMarkExited},
		{"started, exit status: mark exited", at(journal.StateStarted), exited, stepMarkExited},
		{"started, never online within startup_timeout: time out", at(journal.StateStarted), expired, stepTimeout},
		{"started, busy though past startup_timeout: mark busy", at(journal.StateStarted), expiredBusy, stepMarkBusy},
		{"started, ended past startup_timeout: mark exited", at(journal.StateStarted), expiredExited, stepMarkExited},
		{"started, pid gone or reused: mark exited", at(journal.StateStarted), dead, stepMarkExited},
		{"busy, alive: keep", at(journal.StateBusy), busy, stepKeep},
		{"busy, alive, GitHub unreachable: keep", at(journal.StateBusy), observation{Process: p, HasProcess: true, Alive: true}, stepKeep},
		{"busy, exited: mark exited", at(journal.StateBusy), exited, stepMarkExited},
		{"busy past max_job_duration: end it", at(journal.StateBusy), overrun, stepEnd},
		{"busy past max_job_duration, but ended: mark exited", at(journal.StateBusy), overrunExited, stepMarkExited},
		{"busy, a ghost past its grace: end it", at(journal.StateBusy), ghost, stepEnd},
		{"failed for max_job_duration, still alive and listed busy: stop it first", forCause(ReasonMaxJobDuration), busy, stepStop},
		{"failed as a ghost, still alive: stop it", forCause(ReasonGhost), alive, stepStop},
		{"failed for max_job_duration, alive killGrace after the stop: kill it", forCause(ReasonMaxJobDuration), killDue, stepKill},
		{"failed for max_job_duration, ended, listed busy: deregister", forCause(ReasonMaxJobDuration), endedBusy, stepDeregister},
		{"failed for another reason, alive and listed: deregister first, as before", withID(at(journal.StateFailed)), killDue, stepDeregister},
		{"exited: deregister", withID(at(journal.StateExited)), exited, stepDeregister},
		{"deregistered, still running: stop", at(journal.StateDeregistered), alive, stepStop},
		{"deregistered, ended: clean", at(journal.StateDeregistered), exited, stepClean},
		{"deregistered, never ran: clean", at(journal.StateDeregistered), none, stepClean},
		{"deregistered, exit recorded, shim still ending: clean (the launcher allows it)", at(journal.StateDeregistered), ending, stepClean},
		{"failed with runner id: deregister", withID(at(journal.StateFailed)), none, stepDeregister},
		{"failed, found by name: deregister", at(journal.StateFailed), listed, stepDeregister},
		{"failed, list unknown: wait", at(journal.StateFailed), unknownList, stepWait},
		{"failed, unregistered process: stop", at(journal.StateFailed), alive, stepStop},
		{"failed, nothing left: clean", at(journal.StateFailed), settled, stepClean},
		{"failed before an answer to its registration, nothing listed yet: wait", at(journal.StateFailed), none, stepWait},
		{"failed with runner id, not listed: deregister (gone: no call)", withID(at(journal.StateFailed)), none, stepDeregister},
		{"failed, exit recorded, shim still ending: clean (the launcher allows it)", at(journal.StateFailed), endingSettled, stepClean},
		{"liveness unknown: wait, whatever the state", at(journal.StateStarted), broken, stepWait},
		{"cleaned: nothing", at(journal.StateCleaned), none, stepWait},
		// A container runner (issue 27 item 2): its name is journaled in the registered record
		// before it is created; its init is the process, its inspected state the exit status.
		{"container, crashed before create: deregister (then clean: nothing to remove)", ctr(journal.StateRegistered), none, stepDeregister},
		{"container created, not started: deregister (clean removes it)", ctr(journal.StateRegistered), none, stepDeregister},
		{"container running, started not journaled: attach (adopted)", ctr(journal.StateRegistered), ctrAlive, stepAttach},
		{"container running: keep (adopted)", ctr(journal.StateStarted), ctrAlive, stepKeep},
		{"container running a job: keep (adopted)", ctr(journal.StateBusy), ctrAlive, stepKeep},
		{"container exited, not removed: mark exited", ctr(journal.StateBusy), ctrExited, stepMarkExited},
		{"container exited, deregistered, not removed: clean (removes it)", ctr(journal.StateDeregistered), ctrExited, stepClean},
		{"container runtime unreachable: wait", ctr(journal.StateStarted), broken, stepWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(tt.a, tt.o); got != tt.want {
				t.Fatalf("decide(%s, %+v) = %s, want %s", tt.a.State, tt.o, got, tt.want)
			}
		})
	}
}

// Every step decide can choose from a state must be a legal journal transition (or none).
func TestDecideStepsAreLegalTransitions(t *testing.T) {
	target := map[step]journal.State{stepAttach: journal.StateStarted, stepMarkBusy: journal.StateBusy,
		stepMarkExited: journal.StateExited, stepDeregister: journal.StateDeregistered,
		stepClean: journal.StateCleaned, stepDrop: journal.StateCleaned, stepTimeout: journal.StateFailed, stepEnd: journal.StateFailed}
	p := Process{PID: 1, StartTime: 1}
	var obs []observation
	for _, alive := range []bool{false, true} {
		for _, has := range []bool{false, true} {
			for _, ex := range []bool{false, true} {
				for _, list := range []bool{false, true} {
					for _, busy := range []bool{false, true} {
						obs = append(obs, observation{Process: p, HasProcess: has, Alive: alive, Exit: ExitStatus{Exited: ex},
							ListKnown: list, Listed: busy, ListedBusy: busy, StartupExpired: true})
						obs = append(obs, observation{Process: p, HasProcess: has, Alive: alive, Exit: ExitStatus{Exited: ex},
							ListKnown: list, Listed: busy, ListedBusy: busy})
					}
				}
			}
		}
	}
	for _, s := range []journal.State{journal.StatePlanned, journal.StateRegistered, journal.StateStarted, journal.StateBusy,
		journal.StateExited, journal.StateDeregistered, journal.StateFailed} {
		for _, o := range obs {
			st := decide(journal.Attempt{State: s}, o)
			if to, ok := target[st]; ok && !journal.CanTransition(s, to) {
				t.Errorf("decide(%s, %+v) = %s: %s -> %s is illegal", s, o, st, s, to)
			}
			if s == journal.StateBusy && (st == stepStop || st == stepDeregister || st == stepEnd) {
				t.Errorf("a busy runner within max_job_duration and not a ghost must never be stopped or deregistered: decide(%+v) = %s", o, st)
			}
		}
	}
}
