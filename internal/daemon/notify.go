package daemon

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	sdnotify "github.com/coreos/go-systemd/v22/daemon"

	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/service"
)

// notifier speaks systemd's notify protocol (sd_notify(3)) for a Type=notify unit, through
// go-systemd, which reads NOTIFY_SOCKET; outside systemd every call does nothing. Runners never
// see the socket: their environment is an allowlist (internal/runner).
type notifier struct{ log *slog.Logger }

func (n notifier) send(lines ...string) {
	if _, err := sdnotify.SdNotify(false, strings.Join(lines, "\n")); err != nil {
		n.log.Warn("cannot notify systemd; `systemctl status` may show a stale state", "err", err)
	}
}

// ready: the journal is open, live runners are adopted and the target loops run. It does not
// wait for the loops' first passes, which need GitHub: a host cut off from GitHub still starts.
func (n notifier) ready(st engine.Status) { n.send(sdnotify.SdNotifyReady, "STATUS="+statusLine(st)) }

func (n notifier) status(st engine.Status) { n.send("STATUS=" + statusLine(st)) }

// stopping announces the drain and extends systemd's stop timeout to cover it, so a
// shutdown_drain_timeout longer than the unit's TimeoutStopSec is not cut short by SIGKILL.
func (n notifier) stopping(bound time.Duration) {
	n.send(sdnotify.SdNotifyStopping,
		fmt.Sprintf("EXTEND_TIMEOUT_USEC=%d", (bound+service.StopMargin).Microseconds()),
		fmt.Sprintf("STATUS=draining for at most %s; busy runners keep running", bound))
}

// statusLine is the one-line summary `systemctl status` shows.
func statusLine(st engine.Status) string {
	var recovering, starting, busy, idle int
	for _, t := range st.Targets {
		if t.LastPass.IsZero() {
			recovering++
		}
		starting += t.Starting
		busy += t.Busy
		idle += t.Idle
	}
	s := fmt.Sprintf("%s; runners: %d busy, %d idle, %d starting", plural(len(st.Targets), "target"), busy, idle, starting)
	if recovering > 0 {
		s = fmt.Sprintf("%s (%d recovering or in a first pass)", s, recovering)
	}
	if st.Draining != "" {
		s = "draining (" + st.Draining + "); " + s
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
