package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/schedule"
)

// InForce is what a target's schedule puts in force at an instant: the min_idle and max_runners a
// pass plans with, which entry set them, and when that may next change.
type InForce struct {
	MinIdle    int
	MaxRunners int
	// Entry is the index in Target.Schedule of the entry in force, -1 outside every window (the
	// target's own min_idle and max_runners apply).
	Entry int
	// Next is the first minute at which the set of windows containing the minute differs; zero
	// when the target has no schedule or nothing changes within schedule.Horizon.
	Next time.Time
}

// InForce returns the values of t in force at now. Overlapping windows are allowed; the first
// listed entry that contains the minute wins (an exception is written before the rule it
// overrides). An entry whose cron or zone does not parse never matches: Load refuses such a file,
// so only a Config built by hand can hold one.
func (t Target) InForce(now time.Time) InForce {
	f := InForce{MinIdle: t.MinIdle, MaxRunners: t.MaxRunners, Entry: -1}
	if len(t.Schedule) == 0 {
		return f
	}
	windows := make([]schedule.Window, len(t.Schedule))
	for i, e := range t.Schedule {
		windows[i], _ = schedule.Parse(e.Cron, e.TimeZone)
	}
	f.Entry, f.Next = schedule.At(windows, now)
	if f.Entry >= 0 {
		e := t.Schedule[f.Entry]
		f.MinIdle = e.MinIdle
		if e.MaxRunners > 0 {
			f.MaxRunners = min(e.MaxRunners, t.MaxRunners)
		}
	}
	return f
}

// String spells the entry as an inline TOML table, for `config diff` and status.
func (s Schedule) String() string {
	parts := []string{"cron = " + strconv.Quote(s.Cron)}
	if s.TimeZone != "" {
		parts = append(parts, "time_zone = "+strconv.Quote(s.TimeZone))
	}
	parts = append(parts, "min_idle = "+strconv.Itoa(s.MinIdle))
	if s.MaxRunners != 0 {
		parts = append(parts, "max_runners = "+strconv.Itoa(s.MaxRunners))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// checkSchedule validates t's schedule entries; p is the target's path ("target.0").
func (c *checker) checkSchedule(t Target, p string) {
	for i, e := range t.Schedule {
		ep := p + ".schedule." + strconv.Itoa(i)
		name := fmt.Sprintf("schedule #%d", i+1)
		if _, err := schedule.Zone(e.TimeZone); err != nil {
			c.add(SeverityError, ep+".time_zone", fmt.Sprintf("%s: %v", name, err))
		}
		w, err := schedule.Parse(e.Cron, "")
		switch {
		case err != nil:
			c.add(SeverityError, ep+".cron", fmt.Sprintf("%s: %v", name, err))
		case !w.Opens(time.Now()):
			c.add(SeverityError, ep+".cron", fmt.Sprintf("%s: cron %q matches no minute in the next five years (a day that does not exist, such as February 30th): fix the day and month fields", name, e.Cron))
		case w.OneMinute():
			c.add(SeverityWarning, ep+".cron", fmt.Sprintf("%s: cron %q matches one minute of each hour it names, so the window is that minute long (every minute that matches is inside the window): write \"*\" as the minute field for whole hours, such as \"* 8-17 * * 1-5\" for 08:00 to 17:59 on weekdays", name, e.Cron))
		}
		bound := t.MaxRunners
		switch {
		case e.MaxRunners < 0:
			c.add(SeverityError, ep+".max_runners", fmt.Sprintf("%s: max_runners must not be negative, or absent for the target's (got %d)", name, e.MaxRunners))
		case e.MaxRunners > t.MaxRunners && t.MaxRunners >= 1:
			c.add(SeverityError, ep+".max_runners", fmt.Sprintf("%s: max_runners (%d) must not exceed the target's max_runners (%d): a schedule lowers the bound, never raises it; raise the target's max_runners and lower it outside the window with another entry", name, e.MaxRunners, t.MaxRunners))
		case e.MaxRunners > 0:
			bound = e.MaxRunners
		}
		switch {
		case e.MinIdle < 0:
			c.add(SeverityError, ep+".min_idle", fmt.Sprintf("%s: min_idle must not be negative (got %d)", name, e.MinIdle))
		case e.MinIdle > bound && bound >= 1:
			c.add(SeverityError, ep+".min_idle", fmt.Sprintf("%s: min_idle (%d) must not exceed the max_runners in force with it (%d)", name, e.MinIdle, bound))
		}
	}
}
