package service

import (
	"context"
	"time"
)

// Control is a request a service manager sends the running daemon (the Windows SCM's controls,
// translated by RunWindowsService).
type Control int

const (
	ControlInterrogate Control = iota // report the current state again
	ControlStop                       // `service stop`, sc.exe stop: drain and exit
	ControlShutdown                   // the host shuts down: the same drain
	ControlParamChange                // sc.exe control runner-manager paramchange: reload the config
)

// RunState is what the daemon reports to its service manager.
type RunState int

const (
	StateRunning     RunState = iota + 1
	StateStopPending          // draining; the hint is how long the drain may take
)

// Controlled runs the daemon (run) under a service manager's controls until run returns: Stop and
// Shutdown end run's context, the same bounded drain SIGTERM starts; ParamChange is a reload, as
// SIGHUP is; Interrogate reports the state again. report is told Running at once (the SCM waits
// for it to mark the start done; readiness is the daemon's log line and status), then
// StopPending with stopHint once a stop is asked. It returns run's error.
func Controlled(ctx context.Context, controls <-chan Control, report func(RunState, time.Duration), stopHint time.Duration,
	run func(ctx context.Context, reload <-chan struct{}) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reload := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, reload) }()
	state, hint := StateRunning, time.Duration(0)
	report(state, hint)
	for {
		select {
		case err := <-done:
			return err
		case c := <-controls:
			switch c {
			case ControlStop, ControlShutdown:
				if state != StateStopPending {
					state, hint = StateStopPending, stopHint
					cancel()
				}
			case ControlParamChange:
				select { // one pending reload is enough: it reads the file as it is then
				case reload <- struct{}{}:
				default:
				}
			}
			report(state, hint)
		}
	}
}
