package config

import (
	"strings"
	"testing"
	"time"
)

// sched is a target with max_runners 4 and min_idle 1 and the given [[target.schedule]] tables.
func sched(entries ...string) string {
	body := "max_runners = 4\nmin_idle = 1\n"
	for _, e := range entries {
		body += "[[target.schedule]]\n" + e
	}
	return target(body)
}

// TestScheduleRules: one row per rule of checkSchedule, positioned at the entry's key.
func TestScheduleRules(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"valid", sched("cron = \"* 8-17 * * 1-5\"\ntime_zone = \"Europe/Berlin\"\nmin_idle = 2\nmax_runners = 3\n", "cron = \"* * * * 0,6\"\nmin_idle = 0\nmax_runners = 1\n"), ""},
		{"time_zone absent is UTC", sched("cron = \"* 8-17 * * 1-5\"\nmin_idle = 2\n"), ""},
		{"cron syntax", sched("cron = \"* 8-17 * *\"\nmin_idle = 2\n"), `9:1: target "api": schedule #1: cron "* 8-17 * *" has 4 fields, want five`},
		{"cron range", sched("cron = \"* 8-24 * * *\"\n"), `9:1: target "api": schedule #1: cron "* 8-24 * * *": end of range (24) above maximum (23)`},
		{"cron absent", sched("min_idle = 2\n"), `8:3: target "api": schedule #1: cron is empty`},
		{"cron an interval", sched("cron = \"@every 1h\"\n"), `schedule #1: cron "@every 1h" is an interval, not a window`},
		{"cron never matches", sched("cron = \"* * 30 2 *\"\n"), `9:1: target "api": schedule #1: cron "* * 30 2 *" matches no minute in the next five years`},
		{"cron one minute warns", sched("cron = \"0 8 * * 1-5\"\nmin_idle = 1\n"), `9:1: warning: target "api": schedule #1: cron "0 8 * * 1-5" matches one minute of each hour it names`},
		{"time_zone unknown", sched("cron = \"* 8-17 * * *\"\ntime_zone = \"Europe/Berln\"\n"), `10:1: target "api": schedule #1: time_zone "Europe/Berln" is not an IANA time zone name`},
		{"time_zone Local", sched("cron = \"* 8-17 * * *\"\ntime_zone = \"Local\"\n"), `10:1: target "api": schedule #1: time_zone "Local" is the host's own zone`},
		{"max_runners above the target's", sched("cron = \"* 8-17 * * *\"\nmax_runners = 5\n"), `10:1: target "api": schedule #1: max_runners (5) must not exceed the target's max_runners (4): a schedule lowers the bound, never raises it`},
		{"max_runners negative", sched("cron = \"* 8-17 * * *\"\nmax_runners = -1\n"), `10:1: target "api": schedule #1: max_runners must not be negative`},
		{"min_idle negative", sched("cron = \"* 8-17 * * *\"\nmin_idle = -1\n"), `10:1: target "api": schedule #1: min_idle must not be negative`},
		{"min_idle above its max_runners", sched("cron = \"* 8-17 * * *\"\nmin_idle = 3\nmax_runners = 2\n"), `10:1: target "api": schedule #1: min_idle (3) must not exceed the max_runners in force with it (2)`},
		{"min_idle above the target's max_runners", sched("cron = \"* 8-17 * * *\"\nmin_idle = 5\n"), `10:1: target "api": schedule #1: min_idle (5) must not exceed the max_runners in force with it (4)`},
		{"second entry positioned", sched("cron = \"* 8-17 * * *\"\n", "cron = \"* 8-17 * *\"\n"), `11:1: target "api": schedule #2: cron "* 8-17 * *" has 4 fields`},
		{"unknown key", sched("cron = \"* 8-17 * * *\"\nmin_ilde = 1\n"), `10:1: target "api": unknown key "schedule.0.min_ilde" (did you mean "min_idle"?)`},
		{"not a list of tables", target("schedule = \"* 8-17 * * *\"\n"), `6:1: target "api": schedule must be a list of tables`},
	} {
		t.Run(tc.name, func(t *testing.T) { wantOne(t, problemsOf(loadIn(t, "c.toml", tc.body)), tc.want) })
	}
}

// TestScheduleYAML: the same keys in YAML, positioned at the entry's key.
func TestScheduleYAML(t *testing.T) {
	body := "github:\n  device_flow:\n    client_id: x\ntarget:\n  - name: api\n    repository: acme/api\n    max_runners: 4\n" +
		"    schedule:\n      - cron: \"* 8-17 * * 1-5\"\n        time_zone: America/New_York\n        min_idle: 2\n      - cron: \"* 8-17 * *\"\n"
	wantOne(t, problemsOf(loadIn(t, "c.yaml", body)), `12:9: target "api": schedule #2: cron "* 8-17 * *" has 4 fields`)
}

// TestInForce: the first listed entry containing the minute wins; outside every window the target's
// own values apply; an entry without max_runners keeps the target's.
func TestInForce(t *testing.T) {
	cfg, err := loadIn(t, "c.toml", sched(
		"cron = \"* 12 * * *\"\nmin_idle = 0\nmax_runners = 1\n", // lunch: first, so it wins inside business hours
		"cron = \"* 8-17 * * 1-5\"\ntime_zone = \"Europe/Berlin\"\nmin_idle = 3\n",
	))
	if err != nil {
		t.Fatal(err)
	}
	tg := cfg.Targets[0]
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		at               string
		entry, idle, max int
		next             string
	}{
		{"2026-12-07T09:30:00Z", 1, 3, 4, "2026-12-07T12:00:00Z"},  // Mon 10:30 Berlin
		{"2026-12-07T12:15:00Z", 0, 0, 1, "2026-12-07T13:00:00Z"},  // both match: the first listed
		{"2026-12-07T17:30:00Z", -1, 1, 4, "2026-12-08T07:00:00Z"}, // 18:30 Berlin: the target's own
	} {
		f := tg.InForce(at(tc.at))
		if f.Entry != tc.entry || f.MinIdle != tc.idle || f.MaxRunners != tc.max || !f.Next.Equal(at(tc.next)) {
			t.Errorf("InForce(%s) = %+v; want entry %d, min_idle %d, max_runners %d, next %s", tc.at, f, tc.entry, tc.idle, tc.max, tc.next)
		}
	}
	if f := (Target{MinIdle: 2, MaxRunners: 3}).InForce(at("2026-12-07T12:15:00Z")); f != (InForce{MinIdle: 2, MaxRunners: 3, Entry: -1}) {
		t.Errorf("no schedule: %+v", f)
	}
}

// TestScheduleDiff: a changed schedule is one next-pass change, spelled as the file would.
func TestScheduleDiff(t *testing.T) {
	old := &Config{Targets: []Target{{Name: "api", Schedule: []Schedule{{Cron: "* 8-17 * * 1-5", TimeZone: "Europe/Berlin", MinIdle: 2}}}}}
	cur := &Config{Targets: []Target{{Name: "api", Schedule: []Schedule{{Cron: "* 8-18 * * 1-5", TimeZone: "Europe/Berlin", MinIdle: 2, MaxRunners: 3}}}}}
	got := Diff(old, cur)
	want := `target "api": schedule: [{cron = "* 8-17 * * 1-5", time_zone = "Europe/Berlin", min_idle = 2}] -> [{cron = "* 8-18 * * 1-5", time_zone = "Europe/Berlin", min_idle = 2, max_runners = 3}] (next pass)`
	if len(got) != 1 || got[0].String() != want {
		t.Fatalf("Diff = %v\nwant %s", got, want)
	}
	if c := ClassOf("target.schedule"); c != NextPass {
		t.Fatalf("ClassOf(target.schedule) = %s", c)
	}
	if strings.Contains(Diff(old, old).Keys(), "schedule") {
		t.Fatal("an unchanged schedule is a change")
	}
}
