package daemon

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	sdnotify "github.com/coreos/go-systemd/v22/daemon"

	"github.com/runner-manager/runner-manager/internal/heartbeat"
	"github.com/runner-manager/runner-manager/internal/version"
)

// stallCalls is how many call timeouts one step of a target loop (a pass's reads, or one
// runner's reconcile during recovery or a drain) may take before the loop counts as wedged: each
// GitHub call of a step is bounded by one call timeout, so only a deadlock or a call that ignores
// its context reaches three (engine.Supervisor.Stalled).
const stallCalls = 3

// beatEvery is how often the watchdog checks progress: a third of systemd's WatchdogSec (so one
// slow check does not cost a restart), and at least every heartbeat.Interval for the record.
func beatEvery(watchdog time.Duration) time.Duration {
	if watchdog > 0 && watchdog/3 < heartbeat.Interval {
		return watchdog / 3
	}
	return heartbeat.Interval
}

// watchdogLoop tells systemd WATCHDOG=1 (under a unit with WatchdogSec) and rewrites the
// heartbeat record (heartbeat.Write, for hosts without systemd, `service status` and `doctor`)
// only while the supervisor makes progress: every target loop is parked or inside a step younger
// than the stall bound, and the reload path answers. Each check is started at one tick and judged
// at the next, so a wedged part costs the pings without a timer of its own. It runs from before
// the loops start until the drain ends, so startup recovery and drains (which step once per
// runner) are watched too.
func (d *daemon) watchdogLoop(ctx context.Context, notify notifier) {
	systemd, err := sdnotify.SdWatchdogEnabled(false)
	if err != nil {
		d.log.Warn("WATCHDOG_USEC is not understood; systemd's watchdog gets no pings and will restart the daemon", "err", err)
	}
	every := beatEvery(systemd)
	after := d.o.Beat
	if after == nil {
		after = time.After
	}
	stall := stallCalls * d.callTimeout()
	check := func() chan string {
		out := make(chan string, 1)
		go func() { out <- d.progress(ctx, stall) }()
		return out
	}
	pending := check()
	withheld := false
	// The first check is judged after a second, so the heartbeat record (and the first ping)
	// comes as soon as the daemon runs, not a whole interval later.
	wait := min(every, time.Second)
	for {
		select {
		case <-ctx.Done():
			return
		case <-after(wait):
		}
		wait = every
		var why string
		select {
		case why = <-pending:
			pending = check()
		default:
			why = fmt.Sprintf("the progress check started %s ago has not been answered", every)
		}
		if why != "" {
			notify.send("STATUS=no progress: " + why + "; watchdog pings withheld")
			if !withheld {
				d.log.Error("the daemon makes no progress: systemd's watchdog (if set) will restart it; the heartbeat record is not renewed",
					"why", why)
			}
			withheld = true
			continue
		}
		if withheld {
			d.log.Info("the daemon makes progress again; watchdog pings resumed")
			withheld = false
		}
		rec := heartbeat.Record{Time: time.Now(), PID: os.Getpid(), Generation: d.sup.Status().Generation, Version: version.Current()}
		if err := heartbeat.Write(d.config().Daemon.StateDir, rec); err != nil {
			d.log.Warn("cannot write the heartbeat record; `service status` will call the daemon stale", "err", err)
		}
		if systemd > 0 {
			notify.send(sdnotify.SdNotifyWatchdog)
		}
	}
}

// progress checks the supervisor and the reload path; "" means both made progress. It waits for
// the reload path at most until ctx ends (the watchdog judges it at the next tick instead).
func (d *daemon) progress(ctx context.Context, stall time.Duration) string {
	if names := d.sup.Stalled(stall); len(names) > 0 {
		return fmt.Sprintf("target loop(s) %s stuck in one step for over %s", strings.Join(names, ", "), stall)
	}
	answer := make(chan struct{})
	select {
	case d.probe <- answer:
	case <-ctx.Done():
		return ""
	}
	select {
	case <-answer:
		return ""
	case <-ctx.Done():
		return ""
	}
}

func (d *daemon) callTimeout() time.Duration {
	if d.o.CallTimeout > 0 {
		return d.o.CallTimeout
	}
	return 2 * time.Minute // engine.Options' default
}
