package daemon

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/engine/enginetest"
	"github.com/runner-manager/runner-manager/internal/heartbeat"
)

// notifySocket listens where systemd would (NOTIFY_SOCKET) and returns a reader of what the
// daemon sends, failing the test when nothing comes within waitLimit.
func notifySocket(t *testing.T, dir string) (next func(what string) string) {
	t.Helper()
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", sock)
	msgs := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return func(what string) string {
		t.Helper()
		select {
		case m := <-msgs:
			return m
		case <-time.After(waitLimit):
			t.Fatalf("no notification (%s) within %s", what, waitLimit)
			return ""
		}
	}
}

// TestSystemdWatchdog runs the daemon as a unit with WatchdogSec does (NOTIFY_SOCKET and
// WATCHDOG_USEC set) on a fake clock: it pings WATCHDOG=1 and renews the heartbeat record while
// it makes progress; with its reload path wedged (a SIGHUP whose reload blocks on the injected
// clock) the pings stop, `systemctl status` says why and the record is not renewed; unwedged,
// the pings resume. Before issue 30 the daemon never pinged, so systemd could not tell a
// deadlocked daemon from a live one.
func TestSystemdWatchdog(t *testing.T) {
	e := newEnv(t)
	next := notifySocket(t, e.dir)
	t.Setenv("WATCHDOG_USEC", "30000000") // WatchdogSec=30s: a check every 10 s
	const every = 10 * time.Second
	clock := enginetest.NewFakeClock(time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC))
	var wedge atomic.Pointer[chan struct{}]
	e.opts.Now = func() time.Time {
		if ch := wedge.Load(); ch != nil {
			<-*ch
		}
		return clock.Now()
	}
	e.opts.Beat = func(d time.Duration) <-chan time.Time { ch, _ := clock.Timer(d); return ch }
	reload := make(chan struct{}, 1)
	e.opts.Reload = reload
	e.start()

	// tick moves the fake clock to the watchdog's next check and returns what that check sent:
	// WATCHDOG=1, or the STATUS= line saying why it withheld it (periodic STATUS lines are skipped).
	tick := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		if err := clock.BlockUntil(ctx, 1); err != nil {
			t.Fatal("the watchdog never waited for its next check")
		}
		clock.Advance(every)
		for {
			m := next("the watchdog's check")
			if m == "WATCHDOG=1" || strings.HasPrefix(m, "STATUS=no progress") {
				return m
			}
		}
	}
	until := func(want string) {
		t.Helper()
		for range 5 {
			if m := tick(); strings.HasPrefix(m, want) {
				return
			}
		}
		t.Fatalf("no %q within 5 checks", want)
	}

	until("WATCHDOG=1")
	rec, err := heartbeat.Read(e.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.PID != os.Getpid() || rec.Generation != 1 {
		t.Fatalf("heartbeat record %+v; want pid %d, generation 1", rec, os.Getpid())
	}

	gate := make(chan struct{})
	wedge.Store(&gate)
	reload <- struct{}{} // the reload blocks in the injected clock: the reload path no longer answers
	until("STATUS=no progress")
	before, err := heartbeat.Read(e.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if m := tick(); m != "STATUS=no progress: the progress check started 10s ago has not been answered; watchdog pings withheld" {
			t.Fatalf("a check while the reload path is wedged sent %q; want the pings withheld", m)
		}
	}
	if after, err := heartbeat.Read(e.stateDir); err != nil || !after.Time.Equal(before.Time) {
		t.Fatalf("the heartbeat record was renewed while wedged: %+v then %+v (%v)", before, after, err)
	}

	wedge.Store(nil)
	close(gate)
	e.waitLog("unwedged", "config reloaded: no change", 1) // the wedged reload ends; the check it held is answered
	until("WATCHDOG=1")
	if log := e.read(e.logs); !strings.Contains(log, "the daemon makes no progress") || !strings.Contains(log, "watchdog pings resumed") {
		t.Fatalf("the log does not say the pings stopped and resumed:\n%s", log)
	}
}
