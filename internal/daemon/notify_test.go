package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/engine"
)

// TestSystemdNotify runs the daemon with NOTIFY_SOCKET on a socket of the test's, as systemd does
// for a Type=notify unit, and reads what it is told: READY=1 with a STATUS= line once the daemon
// runs, then STOPPING=1 with the stop timeout extended to the drain bound + 30 s.
func TestSystemdNotify(t *testing.T) {
	e := newEnv(t)
	next := notifySocket(t, e.dir)
	stop := e.startStoppable()
	ready := next("READY")
	if !strings.HasPrefix(ready, "READY=1\nSTATUS=1 target; runners: ") {
		t.Fatalf("first notification %q; want READY=1 and a STATUS= line naming the target", ready)
	}
	stop()
	var stopping string
	for stopping == "" || strings.HasPrefix(stopping, "STATUS=") { // a periodic STATUS may come first
		stopping = next("STOPPING")
	}
	want := "STOPPING=1\nEXTEND_TIMEOUT_USEC=35000000\nSTATUS=draining for at most 5s" // shutdown_drain_timeout 5s + 30s
	if !strings.HasPrefix(stopping, want) {
		t.Fatalf("stop notification %q; want it to start with %q", stopping, want)
	}
}

func TestStatusLine(t *testing.T) {
	for _, tc := range []struct {
		st   engine.Status
		want string
	}{
		{engine.Status{}, "0 targets; runners: 0 busy, 0 idle, 0 starting"},
		{engine.Status{Targets: []engine.TargetStatus{{Name: "a", Busy: 2, Idle: 1, LastPass: time.Unix(1, 0)}, {Name: "b", Starting: 1}}},
			"2 targets; runners: 2 busy, 1 idle, 1 starting (1 recovering or in a first pass)"},
		{engine.Status{Draining: "shutdown", Targets: []engine.TargetStatus{{Name: "a", Busy: 1, LastPass: time.Unix(1, 0)}}},
			"draining (shutdown); 1 target; runners: 1 busy, 0 idle, 0 starting"},
	} {
		if got := statusLine(tc.st); got != tc.want {
			t.Errorf("statusLine(%+v) = %q, want %q", tc.st, got, tc.want)
		}
	}
}
