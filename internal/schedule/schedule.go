// Package schedule answers, for an instant, which of a target's schedule windows is in force and
// when that next changes. A window is a five-field cron expression read in an IANA time zone: a
// minute that matches is inside the window (as GitLab Runner's autoscaler periods), so
// "* 8-17 * * 1-5" is 08:00 to 17:59 on weekdays. It owns the cron and zone rules and nothing
// else: config validates with Parse, the engine and status ask At. It never reads the clock.
package schedule

import (
	"fmt"
	"strings"
	"time"

	// The daemon and `validate --offline` run on minimal hosts and CI images without
	// /usr/share/zoneinfo: the embedded copy makes every IANA name loadable there too.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// Window is one parsed cron expression in its time zone.
type Window struct {
	spec *cron.SpecSchedule
	loc  *time.Location
}

// starBit is robfig/cron's mark of a field written "*" (its SpecSchedule keeps it in the bits):
// day-of-month and day-of-week combine as cron does, with OR only when both are restricted.
const starBit = 1 << 63

// Parse reads a five-field cron expression (minute hour day-of-month month day-of-week, with
// names, ranges, lists and steps, or a descriptor such as @daily) in the IANA zone zone ("" is
// UTC). Errors say what to write instead.
func Parse(expr, zone string) (Window, error) {
	loc, err := Zone(zone)
	if err != nil {
		return Window{}, err
	}
	spec, err := parseCron(expr)
	if err != nil {
		return Window{}, err
	}
	return Window{spec: spec, loc: loc}, nil
}

// Zone loads an IANA time zone name; "" is UTC. "Local" is refused: the host's zone differs from
// host to host (a fleet's hosts must agree on when a window opens) and is not in the file.
func Zone(name string) (*time.Location, error) {
	switch name {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, fmt.Errorf(`time_zone "Local" is the host's own zone, which the file does not show and other hosts may not share: name the IANA zone, such as "Europe/Berlin"`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time_zone %q is not an IANA time zone name: use one such as \"Europe/Berlin\", \"America/New_York\" or \"UTC\"", name)
	}
	return loc, nil
}

func parseCron(expr string) (spec *cron.SpecSchedule, err error) {
	e := strings.TrimSpace(expr)
	switch {
	case e == "":
		return nil, fmt.Errorf("cron is empty: write five fields, minute hour day-of-month month day-of-week, such as \"* 8-17 * * 1-5\" (08:00 to 17:59 on weekdays)")
	case strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ="):
		return nil, fmt.Errorf("cron %q names its zone inside the expression: remove the TZ= prefix and set time_zone instead", expr)
	case strings.HasPrefix(e, "@every"):
		return nil, fmt.Errorf("cron %q is an interval, not a window: write five fields whose matching minutes are the window, such as \"* 8-17 * * 1-5\"", expr)
	}
	if n := len(strings.Fields(e)); !strings.HasPrefix(e, "@") && n != 5 {
		return nil, fmt.Errorf("cron %q has %d fields, want five: minute hour day-of-month month day-of-week, such as \"* 8-17 * * 1-5\"", expr, n)
	}
	defer func() {
		// The parser panics on a few malformed inputs (FuzzParse); an operator's typo must be an
		// error, never a crashed validate or daemon.
		if r := recover(); r != nil {
			spec, err = nil, fmt.Errorf("cron %q is not a cron expression", expr)
		}
	}()
	s, err := cron.ParseStandard(e)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %v (fields: minute 0-59, hour 0-23, day-of-month 1-31, month 1-12 or jan-dec, day-of-week 0-6 or sun-sat)", expr, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron %q is not a window: write five fields such as \"* 8-17 * * 1-5\"", expr)
	}
	return spec, nil
}

// OneMinute reports whether the window's minute field matches a single minute of the hour (as
// in "0 8 * * *" or @daily): a window one minute long, which is rarely meant (validate warns).
func (w Window) OneMinute() bool {
	bits := w.spec.Minute &^ starBit
	return bits != 0 && bits&(bits-1) == 0
}

// Opens reports whether the window contains a minute within Horizon of t: "* * 30 2 *" (no
// February 30th) never does, and validate refuses it.
func (w Window) Opens(t time.Time) bool {
	m := t.Truncate(time.Minute)
	return w.Contains(m) || !w.flip(m).IsZero()
}

// Contains reports whether the minute of t, read in the window's zone, matches.
func (w Window) Contains(t time.Time) bool {
	if w.spec == nil {
		return false
	}
	l := t.In(w.loc)
	s := w.spec
	return s.Month&(1<<uint(l.Month())) != 0 && w.dayMatches(l) &&
		s.Hour&(1<<uint(l.Hour())) != 0 && s.Minute&(1<<uint(l.Minute())) != 0
}

func (w Window) dayMatches(l time.Time) bool {
	s := w.spec
	dom := s.Dom&(1<<uint(l.Day())) != 0
	dow := s.Dow&(1<<uint(l.Weekday())) != 0
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// Horizon is how far ahead a change is looked for: a window that neither opens nor closes within
// it (always open, or "* * 29 2 *" seen from the wrong years) reports no change.
const Horizon = 5 * 366 * 24 * time.Hour

// flip returns the first minute after from (a minute start) whose Contains differs from
// Contains(from), or the zero time within Horizon. Minutes are real ones, each read on the zone's
// wall clock: a wall minute that a spring-forward skips never matches, one a fall-back repeats
// matches twice. It skips whole hours or days whose minutes all match or all miss, measured on
// the wall clock; a skip that would cross a change of the zone's offset goes a minute at a time
// instead, so it never lands past the first minute of another hour or day.
func (w Window) flip(from time.Time) time.Time {
	in := w.Contains(from)
	s := w.spec
	if in && s.Minute&allMinutes == allMinutes && s.Hour&allHours == allHours && s.Dom&starBit != 0 && s.Dow&starBit != 0 && s.Month&allMonths == allMonths {
		return time.Time{} // "* * * * *": always open
	}
	end := from.Add(Horizon)
	for t := from; t.Before(end); {
		l := t.In(w.loc)
		toHour := time.Duration(60-l.Minute()) * time.Minute
		toDay := time.Duration(24*60-l.Hour()*60-l.Minute()) * time.Minute
		var step time.Duration
		switch {
		case !in && (s.Month&(1<<uint(l.Month())) == 0 || !w.dayMatches(l)):
			step = toDay
		case !in && s.Hour&(1<<uint(l.Hour())) == 0:
			step = toHour
		case in && s.Minute&allMinutes == allMinutes && s.Hour&allHours == allHours:
			step = toDay // the whole day matches
		case in && s.Minute&allMinutes == allMinutes:
			step = toHour // the whole hour matches
		default:
			step = time.Minute
		}
		if _, off := l.Zone(); step > time.Minute && offset(t.Add(step), w.loc) != off {
			step = time.Minute
		}
		t = t.Add(step)
		if w.Contains(t) != in {
			return t
		}
	}
	return time.Time{}
}

const (
	allMinutes = 1<<60 - 1
	allHours   = 1<<24 - 1
	allMonths  = 1<<13 - 2 // bits 1 to 12
)

func offset(t time.Time, loc *time.Location) int {
	_, off := t.In(loc).Zone()
	return off
}

// At returns the entry in force at t among windows, in their listed order: the first window
// containing t's minute (-1 when none does, the target's own values then apply), and next, the
// first minute after t at which the set of windows containing the minute differs (the zero time
// when none changes within Horizon). Overlapping windows are allowed; the first listed wins, so an
// exception (a holiday, a release night) is written before the rule it overrides.
func At(windows []Window, t time.Time) (entry int, next time.Time) {
	entry = -1
	m := t.Truncate(time.Minute)
	for i, w := range windows {
		if entry < 0 && w.Contains(m) {
			entry = i
		}
		if f := w.flip(m); !f.IsZero() && (next.IsZero() || f.Before(next)) {
			next = f
		}
	}
	return entry, next
}
