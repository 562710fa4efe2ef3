package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/runner-manager/runner-manager/internal/heartbeat"
)

// checkHeartbeat reads the record the daemon rewrites while its supervisor makes progress
// (internal/heartbeat): fresh is a live daemon, stale with its pid alive a wedged one (systemd's
// watchdog restarts it; without systemd nothing does), stale without it a stopped one.
func checkHeartbeat(_ context.Context, e *Env) []Finding {
	state := e.daemon().StateDir
	f := Finding{Check: "heartbeat", Subject: heartbeat.Path(state)}
	if why := e.notHere(); why != "" {
		f.Status, f.Detail = Skip, why
		return []Finding{f}
	}
	r, err := heartbeat.Read(state)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.Status, f.Detail = Skip, "no record: no daemon has run with this state_dir"
		return []Finding{f}
	case err != nil:
		f.Status, f.Detail = Warn, err.Error()
		return []Finding{f}
	}
	age := r.Age(e.Now()).Truncate(1e9)
	switch {
	case !r.Stale(e.Now()):
		f.Status, f.Detail = OK, fmt.Sprintf("pid %d beat %s ago (config generation %d)", r.PID, age, r.Generation)
	case r.Alive():
		f.Status, f.Detail = Fail, fmt.Sprintf("pid %d still runs but its supervisor has made no progress for %s (more than %s): it is wedged", r.PID, age, heartbeat.StaleAfter)
		f.Do = "restart it (sudo systemctl restart runner-manager, or kill it and start it again) and keep its log for a bug report"
	default:
		f.Status, f.Detail = Warn, fmt.Sprintf("the daemon (pid %d) last beat %s ago and no longer runs", r.PID, age)
		f.Do = "start it: sudo runner-manager service start (or runner-manager daemon)"
	}
	return []Finding{f}
}
