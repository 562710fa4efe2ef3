package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"
)

// TestAbsence: a missing config file is held back for MissingFileGrace from when it was first
// seen missing, then acted on; a file that is back, or any other error, is acted on at once and
// ends the absence. Times are given, never slept.
func TestAbsence(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	missing := fmt.Errorf("cannot read config file: %w", fs.ErrNotExist)
	var a absence
	for i, step := range []struct {
		err     error
		at      time.Duration // after t0
		hold    time.Duration
		waiting bool
	}{
		{nil, 0, 0, false},
		{missing, time.Second, MissingFileGrace, true},                       // first seen missing: the whole grace
		{missing, 11 * time.Second, MissingFileGrace - 10*time.Second, true}, // still missing: what is left of it
		{nil, 12 * time.Second, 0, false},                                    // back: acted on, the absence ends
		{missing, 20 * time.Second, MissingFileGrace, true},                  // gone again: a new grace
		{missing, 20*time.Second + MissingFileGrace, 0, false},               // missing for the whole grace: a failed reload
		{missing, 25*time.Second + MissingFileGrace, 0, false},               // and every reload after it, until it is back
		{errors.New("permission denied"), 26*time.Second + MissingFileGrace, 0, false},
		{missing, 27*time.Second + MissingFileGrace, MissingFileGrace, true}, // another error ended the absence
	} {
		now := t0.Add(step.at)
		if got := a.seen(step.err, now); got != step.hold {
			t.Errorf("step %d (%v at %s): hold %s, want %s", i, step.err, step.at, got, step.hold)
		}
		if got := a.waiting(now); got != step.waiting {
			t.Errorf("step %d: waiting %v, want %v", i, got, step.waiting)
		}
	}
}
