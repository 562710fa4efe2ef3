package daemon

import (
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/status"
)

// ScheduleStatus is what t's schedule puts in force at now (config.Target.InForce, the answer each
// pass plans with), as status and `config diff` show it; nil when t has no schedule.
func ScheduleStatus(t config.Target, now time.Time) *status.Schedule {
	if len(t.Schedule) == 0 {
		return nil
	}
	f := t.InForce(now)
	s := &status.Schedule{Entry: f.Entry + 1, MinIdle: f.MinIdle, MaxRunners: f.MaxRunners, NextChange: f.Next}
	if f.Entry >= 0 {
		s.Cron, s.TimeZone = t.Schedule[f.Entry].Cron, t.Schedule[f.Entry].TimeZone
	}
	return s
}
