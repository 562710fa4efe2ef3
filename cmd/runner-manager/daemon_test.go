package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/runner-manager/runner-manager/internal/daemon"
	"github.com/runner-manager/runner-manager/selfupdate"
)

// TestDaemonGCPercent: the daemon collects at GOGC=25 (its goal counts the target loops' stacks,
// docs/operations.md), unless the operator's environment sets GOGC, which then stands.
func TestDaemonGCPercent(t *testing.T) {
	for _, tc := range []struct {
		gogc string
		want int
		set  bool
	}{{"", daemonGCPercent, true}, {"100", 0, false}, {"off", 0, false}} {
		p, set := gcPercent(func(k string) string {
			if k == "GOGC" {
				return tc.gogc
			}
			return ""
		})
		if p != tc.want || set != tc.set {
			t.Errorf("GOGC=%q: gcPercent = %d, %v; want %d, %v", tc.gogc, p, set, tc.want, tc.set)
		}
	}
}

// TestDaemonExitCodes: each failure class of the daemon, wrapped as the daemon wraps it, exits with
// its documented code (docs/exit-codes.md); anything else exits 1, and no error exits 0.
func TestDaemonExitCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("start: %w", selfupdate.ErrUpgradePending), exitUpgradePending},
		{fmt.Errorf("load: %w", daemon.ErrConfigInvalid), exitFailure},
		{fmt.Errorf("load: %w", daemon.ErrConfigUnreadable), exitUsage},
		{fmt.Errorf("lock: %w", daemon.ErrConflict), exitConflict},
		{fmt.Errorf("github: %w", daemon.ErrNotAuthenticated), exitNotAuthed},
		{fmt.Errorf("journal: %w", daemon.ErrLocalState), exitLocalState},
		{errors.New("anything else"), exitFailure},
	} {
		var e *exitError
		if !errors.As(daemonExit(tc.err), &e) || e.code != tc.want {
			t.Errorf("daemonExit(%v) = %v, want exit %d", tc.err, daemonExit(tc.err), tc.want)
		}
	}
	if err := daemonExit(nil); err != nil {
		t.Errorf("daemonExit(nil) = %v", err)
	}
}
