//go:build e2e

package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/heartbeat"
)

// TestWatchdogPingsAndHeartbeat is issue 30 item 3 on the real binary, started as systemd starts
// a unit with WatchdogSec=3s (NOTIFY_SOCKET and WATCHDOG_USEC set): it says READY=1, then pings
// WATCHDOG=1 at least once a second (a third of the timeout) while it runs jobs, and keeps the
// heartbeat record in its state dir (its pid and config generation, 0600), renewed while it makes
// progress. The wedged case is TestSystemdWatchdog's (internal/daemon, on a fake clock).
func TestWatchdogPingsAndHeartbeat(t *testing.T) {
	t.Parallel()
	sim, cfg := simWithA(t, 1, nil)
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	d := harness.StartDaemon(t, cfg.Write(t), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=3000000")
	job := sim.MustQueue(t, "acme/a", labels, 3*time.Second)

	pings, ready := 0, false
	var first, last time.Time
	buf := make([]byte, 4096)
	deadline := time.Now().Add(eventTimeout)
	for pings < 4 {
		if err := conn.SetReadDeadline(deadline); err != nil {
			t.Fatal(err)
		}
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("%d WATCHDOG=1 pings within %s (READY=1 seen: %v): %v", pings, eventTimeout, ready, err)
		}
		switch msg := string(buf[:n]); {
		case strings.HasPrefix(msg, "READY=1"):
			ready = true
		case msg == "WATCHDOG=1":
			if !ready {
				t.Fatal("WATCHDOG=1 before READY=1")
			}
			if pings == 0 {
				first = time.Now()
			}
			last = time.Now()
			pings++
		case strings.HasPrefix(msg, "STATUS=no progress"):
			t.Fatalf("the daemon withheld a ping: %q", msg)
		}
	}
	if gap := last.Sub(first) / 3; gap > 2*time.Second {
		t.Errorf("pings every %s on average; want about one a second (WatchdogSec/3)", gap)
	}
	rec, err := heartbeat.Read(cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.PID != d.PID || rec.Generation != 1 || time.Since(rec.Time) > 5*time.Second {
		t.Errorf("heartbeat record %+v; want pid %d, generation 1, renewed within the last seconds", rec, d.PID)
	}
	if fi, err := os.Stat(heartbeat.Path(cfg.StateDir)); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("heartbeat record mode %v, want 0600", fi.Mode().Perm())
	}
	sim.WaitJobsDone(t, jobsTimeout, job)
	stopWithinBound(t, d, sim, cfg)
}
