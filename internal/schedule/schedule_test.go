package schedule

import (
	"strings"
	"testing"
	"time"
)

func utc(y int, mo time.Month, d, h, m int) time.Time {
	return time.Date(y, mo, d, h, m, 0, 0, time.UTC)
}

func mustParse(t *testing.T, expr, zone string) Window {
	t.Helper()
	w, err := Parse(expr, zone)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", expr, zone, err)
	}
	return w
}

// TestAt pins which entry is in force and when the next change comes, on ordinary days and across
// the DST changes of Europe/Berlin (2027-03-28 02:00 CET -> 03:00 CEST, 2027-10-31 03:00 CEST ->
// 02:00 CET) and America/New_York (2027-03-14 02:00 EST -> 03:00 EDT, 2027-11-07 02:00 EDT ->
// 01:00 EST). Instants are written in UTC so the expectation does not lean on the code under test.
func TestAt(t *testing.T) {
	type win struct{ cron, zone string }
	for _, tc := range []struct {
		name  string
		wins  []win
		at    time.Time
		entry int
		next  time.Time // zero: no change within Horizon
	}{
		{"inside business hours", []win{{"* 8-17 * * 1-5", "Europe/Berlin"}}, utc(2026, 12, 7, 9, 0), 0, utc(2026, 12, 7, 17, 0)}, // Mon 10:00 CET -> 18:00 CET
		{"a second into the minute is that minute", []win{{"* 8-17 * * 1-5", "UTC"}}, utc(2026, 12, 7, 17, 59).Add(59 * time.Second), 0, utc(2026, 12, 7, 18, 0)},
		{"night: opens next morning", []win{{"* 8-17 * * 1-5", "Europe/Berlin"}}, utc(2026, 12, 7, 20, 0), -1, utc(2026, 12, 8, 7, 0)},
		{"friday evening: opens monday", []win{{"* 8-17 * * 1-5", "UTC"}}, utc(2026, 12, 11, 18, 0), -1, utc(2026, 12, 14, 8, 0)},
		{"always open never changes", []win{{"* * * * *", "UTC"}}, utc(2026, 12, 7, 9, 0), 0, time.Time{}},
		{"no window", nil, utc(2026, 12, 7, 9, 0), -1, time.Time{}},
		{"first listed wins an overlap", []win{{"* 12 * * *", "UTC"}, {"* 8-17 * * *", "UTC"}}, utc(2026, 12, 7, 12, 30), 0, utc(2026, 12, 7, 13, 0)},
		{"the next change is the earliest of any window", []win{{"* 8-17 * * *", "UTC"}, {"* 12 * * *", "UTC"}}, utc(2026, 12, 7, 9, 0), 0, utc(2026, 12, 7, 12, 0)},
		{"second entry when the first is closed", []win{{"* 12 * * *", "UTC"}, {"* 8-17 * * *", "UTC"}}, utc(2026, 12, 7, 9, 0), 1, utc(2026, 12, 7, 12, 0)},
		{"dom and dow both restricted: either", []win{{"* * 1 * 1", "UTC"}}, utc(2026, 12, 1, 10, 0), 0, utc(2026, 12, 2, 0, 0)}, // Tue 1st
		{"minute list", []win{{"0-29 * * * *", "UTC"}}, utc(2026, 12, 7, 9, 10), 0, utc(2026, 12, 7, 9, 30)},

		// Berlin, spring forward: 02:00-02:59 does not exist on 2027-03-28.
		{"berlin spring: the missing hour never opens", []win{{"* 2 * * *", "Europe/Berlin"}}, utc(2027, 3, 27, 23, 0), -1, utc(2027, 3, 29, 0, 0)}, // opens 2027-03-29 02:00 CEST
		{"berlin spring: a missing minute", []win{{"30 2 * * *", "Europe/Berlin"}}, utc(2027, 3, 28, 0, 0), -1, utc(2027, 3, 29, 0, 30)},
		{"berlin spring: a window across the gap", []win{{"* 1-3 * * *", "Europe/Berlin"}}, utc(2027, 3, 28, 0, 59), 0, utc(2027, 3, 28, 2, 0)}, // 01:59 CET -> 04:00 CEST
		{"berlin spring: business hours keep wall time", []win{{"* 8-17 * * *", "Europe/Berlin"}}, utc(2027, 3, 27, 18, 0), -1, utc(2027, 3, 28, 6, 0)},
		// Berlin, fall back: 02:00-02:59 happens twice on 2027-10-31.
		{"berlin fall: the hour twice, first time", []win{{"* 2 * * *", "Europe/Berlin"}}, utc(2027, 10, 31, 0, 10), 0, utc(2027, 10, 31, 2, 0)}, // 02:10 CEST -> 03:00 CET
		{"berlin fall: the hour twice, second time", []win{{"* 2 * * *", "Europe/Berlin"}}, utc(2027, 10, 31, 1, 10), 0, utc(2027, 10, 31, 2, 0)},
		{"berlin fall: a minute twice, first", []win{{"30 2 * * *", "Europe/Berlin"}}, utc(2027, 10, 31, 0, 30), 0, utc(2027, 10, 31, 0, 31)},
		{"berlin fall: a minute twice, opens again", []win{{"30 2 * * *", "Europe/Berlin"}}, utc(2027, 10, 31, 0, 31), -1, utc(2027, 10, 31, 1, 30)},
		{"berlin fall: business hours keep wall time", []win{{"* 8-17 * * *", "Europe/Berlin"}}, utc(2027, 10, 30, 18, 0), -1, utc(2027, 10, 31, 7, 0)},
		// New York.
		{"new york spring over a weekend", []win{{"* 8-17 * * 1-5", "America/New_York"}}, utc(2027, 3, 12, 23, 0), -1, utc(2027, 3, 15, 12, 0)}, // Fri 18:00 EST -> Mon 08:00 EDT
		{"new york spring: the missing hour", []win{{"* 2 * * *", "America/New_York"}}, utc(2027, 3, 14, 6, 0), -1, utc(2027, 3, 15, 6, 0)},
		{"new york fall: 01:00 twice", []win{{"* 1 * * *", "America/New_York"}}, utc(2027, 11, 7, 5, 0), 0, utc(2027, 11, 7, 7, 0)}, // 01:00 EDT -> 02:00 EST
		{"new york fall: closes at wall 18:00", []win{{"* 8-17 * * *", "America/New_York"}}, utc(2027, 11, 7, 14, 0), 0, utc(2027, 11, 7, 23, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ws []Window
			for _, w := range tc.wins {
				ws = append(ws, mustParse(t, w.cron, w.zone))
			}
			entry, next := At(ws, tc.at)
			if entry != tc.entry || !next.Equal(tc.next) {
				t.Fatalf("At(%s) = entry %d, next %s; want entry %d, next %s", tc.at, entry, next.UTC(), tc.entry, tc.next)
			}
			// The answer holds for every minute up to the change: the entry stays, the change is the same.
			if !next.IsZero() {
				before := next.Add(-time.Minute)
				if e, n := At(ws, before); e != entry || !n.Equal(next) {
					t.Fatalf("At(%s), a minute before the change = %d, %s; want %d, %s", before, e, n.UTC(), entry, next)
				}
			}
		})
	}
}

// TestFlipAgreesWithAScan: the skips of flip land on the minute a scan one minute at a time finds,
// for windows of every shape, every hour of DST days in both zones.
func TestFlipAgreesWithAScan(t *testing.T) {
	crons := []string{"* 2 * * *", "30 2 * * *", "* 1-3 * * *", "* 8-17 * * 1-5", "0-29 * * * *", "* * * * 0", "* 0 * * *", "* 23 * * *", "*/7 2-4 * * *", "* * 28 3 *", "* * 31 10 *"}
	days := []struct {
		zone string
		day  time.Time
	}{
		{"Europe/Berlin", utc(2027, 3, 27, 12, 0)}, {"Europe/Berlin", utc(2027, 10, 30, 12, 0)},
		{"America/New_York", utc(2027, 3, 13, 12, 0)}, {"America/New_York", utc(2027, 11, 6, 12, 0)},
		{"Australia/Lord_Howe", utc(2027, 4, 3, 0, 0)}, {"Pacific/Chatham", utc(2027, 9, 25, 0, 0)},
	}
	for _, d := range days {
		for _, c := range crons {
			w := mustParse(t, c, d.zone)
			for h := 0; h < 48; h += 3 {
				from := d.day.Add(time.Duration(h) * time.Hour)
				want := from.Add(time.Minute)
				for ; w.Contains(want) == w.Contains(from) && want.Sub(from) < 3*24*time.Hour; want = want.Add(time.Minute) {
				}
				got := w.flip(from)
				if want.Sub(from) >= 3*24*time.Hour && (got.IsZero() || !got.Before(want)) {
					continue // beyond the scan: flip only must not find an earlier change
				}
				if !got.Equal(want) {
					t.Fatalf("%s in %s from %s: flip = %s, scan = %s", c, d.zone, from, got, want)
				}
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ cron, zone, want string }{
		{"", "UTC", "cron is empty"},
		{"* 8-17 * *", "UTC", "has 4 fields, want five"},
		{"0 * 8-17 * * 1-5", "UTC", "has 6 fields"},
		{"* 25 * * *", "UTC", "above maximum"},
		{"* 8-17 * * mon-fry", "UTC", `cron "* 8-17 * * mon-fry"`},
		{"@every 1h", "UTC", "an interval, not a window"},
		{"TZ=Europe/Berlin * 8-17 * * *", "UTC", "set time_zone instead"},
		{"TZ=x", "UTC", "set time_zone instead"},
		{"* 8-17 * * 1-5", "Europe/Berlinn", `time_zone "Europe/Berlinn" is not an IANA time zone name`},
		{"* 8-17 * * 1-5", "Local", "the host's own zone"},
		{"* 8-17 * * 1-5", "CET+1", "not an IANA time zone name"},
	} {
		_, err := Parse(tc.cron, tc.zone)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %q) = %v; want an error with %q", tc.cron, tc.zone, err, tc.want)
		}
	}
}

func TestWindowShapes(t *testing.T) {
	at := utc(2026, 12, 7, 9, 0)
	for _, tc := range []struct {
		cron       string
		one, opens bool
	}{
		{"0 8 * * *", true, true}, {"@daily", true, true}, {"* 8-17 * * *", false, true},
		{"0-29 * * * *", false, true}, {"* * 30 2 *", false, false}, {"* * 29 2 *", false, true},
	} {
		w := mustParse(t, tc.cron, "UTC")
		if w.OneMinute() != tc.one || w.Opens(at) != tc.opens {
			t.Errorf("%q: OneMinute %v, Opens %v; want %v, %v", tc.cron, w.OneMinute(), w.Opens(at), tc.one, tc.opens)
		}
	}
}

func TestZone(t *testing.T) {
	for _, name := range []string{"", "UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"} {
		if _, err := Zone(name); err != nil {
			t.Errorf("Zone(%q): %v", name, err)
		}
	}
}

// FuzzParse: no input makes the parser panic (robfig/cron panics on some; Parse must not).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"* 8-17 * * 1-5", "TZ=x", "@daily", "*/0 * * * *", "1-2-3 * * * *", "CRON_TZ= * * * * *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		w, err := Parse(expr, "UTC")
		if err == nil {
			w.Contains(utc(2026, 12, 7, 9, 0))
		}
	})
}
