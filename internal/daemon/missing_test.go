package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/engine/enginetest"
	"github.com/runner-manager/runner-manager/internal/livetest"
	"github.com/runner-manager/runner-manager/internal/status"
)

const waitingLine = "waiting for the file to come back"

// TestMissingConfigFileIsAWarningForAMoment: the config file deleted, or its directory renamed
// away, and then back is a warning ("waiting for the file to come back"), never a failed reload in
// status nor an error in the log; missing for MissingFileGrace (the fake clock moved past it), it
// is a failed reload as before. Before the grace, each absence was logged at ERROR and status said
// "last reload failed" until the file was back (issue 28).
func TestMissingConfigFileIsAWarningForAMoment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clock := enginetest.NewFakeClock(time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC))
	e.opts.Now = clock.Now
	e.opts.After = func(d time.Duration) <-chan time.Time { ch, _ := clock.Timer(d); return ch }
	etc := filepath.Join(e.dir, "etc")
	if err := os.Mkdir(etc, 0o700); err != nil {
		t.Fatal(err)
	}
	e.configPath = filepath.Join(etc, "config.toml")
	base := strings.Replace(e.configText(webTarget(1)), "[daemon]\n", "[daemon]\nreload_settle = \"100ms\"\n", 1)
	e.writeRaw(base)
	e.start()

	away := func() { // the directory renamed away (a config tool's swap), then back
		if err := os.Rename(etc, etc+".old"); err != nil {
			t.Fatal(err)
		}
	}
	back := func() {
		if err := os.Rename(etc+".old", etc); err != nil {
			t.Fatal(err)
		}
	}
	for i, gone := range []struct {
		name       string
		away, back func()
	}{
		{"deleted", func() { _ = os.Remove(e.configPath) }, func() { e.writeRaw(base) }},
		{"its directory renamed away", away, back},
	} {
		gone.away()
		e.waitLog(gone.name, waitingLine, i+1)
		if s := e.status(); !s.Config.LastReload.OK {
			t.Errorf("%s: status says the last reload failed while the file is only missing for a moment: %v", gone.name, s.Config.LastReload.Error)
		}
		gone.back()
		e.waitLog(gone.name+", then back", "config reloaded: no change", i+1)
	}
	if s := e.status(); !s.Config.LastReload.OK {
		t.Errorf("the file is back, yet status says the last reload failed: %v", s.Config.LastReload.Error)
	}
	if logs := e.read(e.logs); strings.Contains(logs, "ERR") || strings.Contains(logs, "config rejected") {
		t.Errorf("a file missing for a moment was logged as an error:\n%s", logs)
	}

	// Missing for the whole grace: a failed reload, as any unreadable file.
	if err := os.Remove(e.configPath); err != nil {
		t.Fatal(err)
	}
	e.waitLog("deleted for good", waitingLine, 3)
	// The WARN is logged before the reload loop sets its grace timer, so the clock is moved on at
	// every look until the timer it sets has fired (a single Advance could come first and be lost).
	snap := e.waitStatus("the grace's end", func(s status.Snapshot) bool {
		if s.Config.LastReload.OK {
			clock.Advance(MissingFileGrace)
		}
		return !s.Config.LastReload.OK
	})
	if errs := strings.Join(snap.Config.LastReload.Error, "\n"); !strings.Contains(errs, "no such file") {
		t.Errorf("the failed reload does not say the file is missing: %s", errs)
	}
}

// status is the daemon's status now.
func (e *env) status() status.Snapshot {
	e.t.Helper()
	return e.waitStatus("the status socket answers", func(status.Snapshot) bool { return true })
}

// waitLog waits until the daemon's log holds line at least n times.
func (e *env) waitLog(what, line string, n int) {
	e.t.Helper()
	seen := func() bool { return strings.Count(e.read(e.logs), line) >= n } // a real daemon and a real file watch
	if err := livetest.Poll(waitLimit, 50*time.Millisecond, seen); err != nil {
		e.t.Fatalf("%v waiting for %q (%d times) after the file was %s", err, line, n, what)
	}
}
