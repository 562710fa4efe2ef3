package status

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestScheduleRendering: status shows, under the targets table, the schedule entry in force of each
// target that has a schedule and when that next changes; --json carries the same as a target's
// "schedule".
func TestScheduleRendering(t *testing.T) {
	s := fixture()
	s.Events = nil
	s.Targets[0].Schedule = &Schedule{Entry: 2, Cron: "* 8-17 * * mon-fri", TimeZone: "Europe/Berlin", MinIdle: 3, MaxRunners: 5,
		NextChange: now.Add(3*time.Hour + 30*time.Minute)}
	s.Targets[1].Schedule = &Schedule{MinIdle: 0, MaxRunners: 2, NextChange: now.Add(18 * time.Hour)}
	s.Targets[2].Schedule = &Schedule{Entry: 1, Cron: "* * * * *", MinIdle: 1, MaxRunners: 1}
	var got bytes.Buffer
	if err := RenderStatus(&got, s, now); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "status-schedule.txt", got.Bytes())
	got.Reset()
	if err := WriteJSON(&got, s.Targets[0]); err != nil {
		t.Fatal(err)
	}
	if want := `"schedule": {
    "entry": 2,
    "cron": "* 8-17 * * mon-fri",
    "time_zone": "Europe/Berlin",
    "min_idle": 3,
    "max_runners": 5,
    "next_change": "2026-12-02T17:30:00Z"
  }`; !strings.Contains(got.String(), want) {
		t.Errorf("--json:\n%s\nwant it to hold\n%s", got.String(), want)
	}
}
