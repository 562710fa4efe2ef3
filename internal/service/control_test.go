package service

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

type reported struct {
	state RunState
	hint  time.Duration
}

// TestControlled: the Windows service's controls, as the daemon sees them: Stop and Shutdown are
// SIGTERM's drain, ParamChange is SIGHUP's reload (one pending at most), Interrogate only reports.
func TestControlled(t *testing.T) {
	errUpgrade := errors.New("upgrade pending")
	for _, tc := range []struct {
		name     string
		controls []Control
		reloads  int   // reloads the daemon sees before its context ends
		selfEnd  error // the daemon ends by itself with this error (an upgrade's handover)
		want     []reported
	}{
		{"stop", []Control{ControlStop}, 0, nil,
			[]reported{{StateRunning, 0}, {StateStopPending, time.Minute}}},
		{"shutdown, asked twice", []Control{ControlShutdown, ControlStop}, 0, nil,
			[]reported{{StateRunning, 0}, {StateStopPending, time.Minute}, {StateStopPending, time.Minute}}},
		{"interrogate, paramchange twice, stop", []Control{ControlInterrogate, ControlParamChange, ControlParamChange, ControlStop}, 1, nil,
			[]reported{{StateRunning, 0}, {StateRunning, 0}, {StateRunning, 0}, {StateRunning, 0}, {StateStopPending, time.Minute}}},
		{"the daemon ends by itself", nil, 0, errUpgrade, []reported{{StateRunning, 0}}},
	} {
		controls := make(chan Control)
		delivered := make(chan struct{}) // closed once Controlled took every control
		var got []reported
		reloads := 0
		run := func(ctx context.Context, reload <-chan struct{}) error {
			if tc.selfEnd != nil {
				return tc.selfEnd
			}
			<-ctx.Done()
			<-delivered
			for {
				select {
				case <-reload:
					reloads++
				default:
					return ctx.Err()
				}
			}
		}
		go func() {
			for _, c := range tc.controls {
				controls <- c
			}
			close(delivered)
		}()
		err := Controlled(t.Context(), controls, func(s RunState, hint time.Duration) { got = append(got, reported{s, hint}) }, time.Minute, run)
		if want := tc.selfEnd; want == nil && !errors.Is(err, context.Canceled) || want != nil && !errors.Is(err, want) {
			t.Errorf("%s: Controlled = %v", tc.name, err)
		}
		if !slices.Equal(got, tc.want) || reloads != tc.reloads {
			t.Errorf("%s: reported %v with %d reloads, want %v with %d", tc.name, got, reloads, tc.want, tc.reloads)
		}
	}
}
