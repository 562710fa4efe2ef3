package fleet

import (
	"testing"

	"github.com/runner-manager/runner-manager/config"
)

// TestFingerprintOfASchedule: hosts must agree on a target's schedule (which entry is in force is
// the fleet's min_idle), not on an entry's max_runners (each host's own bound), and a target
// without a schedule keeps the fingerprint it had before schedules existed.
func TestFingerprintOfASchedule(t *testing.T) {
	base := config.Target{Name: "api", Repository: "acme/api", Labels: []string{"linux"}, RunnerVersion: "latest", MinIdle: 1, Mode: "autoscale"}
	if got := Fingerprint(base); got != "9801495254bf" {
		t.Fatalf("a target without a schedule: fingerprint %s, want 9801495254bf as before schedules (a changed hash splits a fleet mid-upgrade)", got)
	}
	with := func(e ...config.Schedule) config.Target { c := base; c.Schedule = e; return c }
	day := config.Schedule{Cron: "* 8-17 * * 1-5", TimeZone: "Europe/Berlin", MinIdle: 3}
	for _, tc := range []struct {
		name  string
		a, b  config.Target
		agree bool
	}{
		{"a schedule added", base, with(day), false},
		{"another zone", with(day), with(config.Schedule{Cron: day.Cron, TimeZone: "UTC", MinIdle: 3}), false},
		{"another min_idle", with(day), with(config.Schedule{Cron: day.Cron, TimeZone: day.TimeZone, MinIdle: 2}), false},
		{"another order", with(day, config.Schedule{Cron: "* 12 * * *"}), with(config.Schedule{Cron: "* 12 * * *"}, day), false},
		{"another max_runners", with(day), with(config.Schedule{Cron: day.Cron, TimeZone: day.TimeZone, MinIdle: 3, MaxRunners: 2}), true},
	} {
		if agree := Fingerprint(tc.a) == Fingerprint(tc.b); agree != tc.agree {
			t.Errorf("%s: fingerprints agree %v, want %v", tc.name, agree, tc.agree)
		}
	}
}
