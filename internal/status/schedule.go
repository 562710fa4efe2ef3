package status

import (
	"fmt"
	"time"
)

// Schedule says which entry of a target's schedule is in force and when that next changes.
type Schedule struct {
	// Entry is the 1-based number of the entry in force in the target's list; 0 outside every
	// window, when the target's own min_idle and max_runners apply.
	Entry    int    `json:"entry"`
	Cron     string `json:"cron,omitempty"` // the entry's cron and time zone
	TimeZone string `json:"time_zone,omitempty"`
	// MinIdle and MaxRunners are the values in force.
	MinIdle    int `json:"min_idle"`
	MaxRunners int `json:"max_runners"`
	// NextChange is the next minute at which the set of matching windows differs; zero when none
	// does within five years.
	NextChange time.Time `json:"next_change,omitzero"`
}

// Describe is one line for the operator, as status and `config diff` print it after the target's
// name: `schedule #1 in force (cron "* 8-17 * * 1-5", Europe/Berlin): min_idle 3, max_runners 4;
// next change in 8h30m (2026-12-07T17:00:00Z)`.
func (s Schedule) Describe(now time.Time) string {
	what := "no schedule entry in force (the target's own values)"
	if s.Entry > 0 {
		zone := s.TimeZone
		if zone == "" {
			zone = "UTC"
		}
		what = fmt.Sprintf("schedule #%d in force (cron %q, %s)", s.Entry, s.Cron, zone)
	}
	next := "no change within five years"
	if !s.NextChange.IsZero() {
		next = fmt.Sprintf("next change in %s (%s)", age(s.NextChange, now), s.NextChange.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s: min_idle %d, max_runners %d; %s", what, s.MinIdle, s.MaxRunners, next)
}
