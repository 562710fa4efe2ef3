package daemon

import (
	"testing"

	"github.com/runner-manager/runner-manager/internal/runner"
	"github.com/runner-manager/runner-manager/journal"
)

// TestFailedKeepsOnlyFailedOrStopped: a runner that ran its job and exited 0 keeps nothing (its
// job's logs are GitHub's), nor does an idle runner the daemon reaped without a reason; every
// other end, and every stop the journal gives a reason, keeps its diagnostics, the reason shown.
func TestFailedKeepsOnlyFailedOrStopped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		exit   runner.Exit
		exited bool
		a      journal.Attempt
		want   string
		keep   bool
	}{
		{"ended its job", runner.Exit{ExitCode: 0}, true, journal.Attempt{}, "", false},
		{"exit 1", runner.Exit{ExitCode: 1}, true, journal.Attempt{}, "exited with status 1", true},
		{"killed", runner.Exit{ExitCode: -1, Signal: "SIGKILL"}, true, journal.Attempt{}, "killed by SIGKILL", true},
		{"idle runner reaped", runner.Exit{ExitCode: 0, StopRequested: true}, true, journal.Attempt{State: journal.StateDeregistered}, "", false},
		{"idle runner reaped, killed", runner.Exit{ExitCode: -1, Signal: "SIGKILL", StopRequested: true}, true, journal.Attempt{}, "", false},
		{"never started", runner.Exit{ExitCode: -1, Error: "exec run.sh: permission denied"}, true, journal.Attempt{}, "exec run.sh: permission denied", true},
		{"no exit status", runner.Exit{}, false, journal.Attempt{}, "no exit status: the runner was killed, or never started", true},
		{"journal reason first", runner.Exit{ExitCode: 0, StopRequested: true}, true, journal.Attempt{Reason: "registration_timed_out: never came online"}, "registration_timed_out: never came online", true},
	} {
		got, keep := failed(tc.exit, tc.exited, tc.a)
		if got != tc.want || keep != tc.keep {
			t.Errorf("%s: failed = %q, %v; want %q, %v", tc.name, got, keep, tc.want, tc.keep)
		}
	}
}
