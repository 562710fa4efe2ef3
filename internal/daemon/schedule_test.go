package daemon

import (
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/status"
)

// TestStatusShowsTheScheduleInForce: the status socket carries each scheduled target's entry in
// force and its next change, computed at the daemon's clock (a fixed Wednesday, 10:30 in Berlin).
func TestStatusShowsTheScheduleInForce(t *testing.T) {
	e := newEnv(t)
	e.opts.Now = func() time.Time { return time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC) }
	e.writeConfig(webTarget(2) + `
[[target.schedule]]
cron = "* 8-17 * * mon-fri"
time_zone = "Europe/Berlin"
min_idle = 0
max_runners = 1
`)
	e.start()
	snap := e.waitStatus("the target's first pass", func(s status.Snapshot) bool { return target(s).Schedule != nil })
	want := status.Schedule{Entry: 1, Cron: "* 8-17 * * mon-fri", TimeZone: "Europe/Berlin", MinIdle: 0, MaxRunners: 1,
		NextChange: time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)}
	if got := *target(snap).Schedule; got != want {
		t.Fatalf("status schedule = %+v, want %+v", got, want)
	}
}

// TestScheduleStatus: outside every window the target's own values, no entry; no schedule, nil.
func TestScheduleStatus(t *testing.T) {
	ct := config.Target{Name: "web", MaxRunners: 3, MinIdle: 1, Schedule: []config.Schedule{{Cron: "* 8-17 * * *", MinIdle: 2}}}
	got := ScheduleStatus(ct, time.Date(2026, 12, 2, 20, 0, 0, 0, time.UTC))
	want := status.Schedule{MinIdle: 1, MaxRunners: 3, NextChange: time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)}
	if got == nil || *got != want {
		t.Fatalf("ScheduleStatus = %+v, want %+v", got, want)
	}
	ct.Schedule = nil
	if s := ScheduleStatus(ct, time.Now()); s != nil {
		t.Fatalf("no schedule: %+v", s)
	}
}
