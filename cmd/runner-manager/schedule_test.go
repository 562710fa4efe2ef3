package main

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/golden"
)

// TestConfigDiffSchedule: a changed schedule is one next-pass change, and config diff ends with the
// entry of FILE in force now and when that next changes, for each target with a schedule (the
// clock is a fixed Monday, 10:30 in Berlin).
func TestConfigDiffSchedule(t *testing.T) {
	write := files(t)
	write("token", "x")
	base := "[github]\ntoken_file = \"token\"\n[[target]]\nname = \"api\"\nrepository = \"acme/api\"\nmax_runners = 4\nmin_idle = 1\n" +
		"[[target.schedule]]\ncron = \"* 8-17 * * mon-fri\"\ntime_zone = \"Europe/Berlin\"\nmin_idle = 2\n" +
		"[[target]]\nname = \"web\"\nrepository = \"acme/web\"\n"
	cur := write("cur.toml", base)
	next := write("next.toml", strings.Replace(base, "min_idle = 2", "min_idle = 3\nmax_runners = 3", 1))
	now := func() time.Time { return time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC) }
	stdout, code := runCmd(configDiffCmd(now), "--config", cur, next)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	golden.Check(t, "testdata/config-diff-schedule.golden", []byte(stdout), *update)
	if stdout, _ := runCmd(configDiffCmd(now), "--config", cur, cur); !strings.Contains(stdout, "no change") ||
		!strings.Contains(stdout, `target "api": schedule #1 in force`) {
		t.Fatalf("same file: %q", stdout)
	}
}

// TestValidateOfflineChecksSchedules: `validate --offline` (CI, no host files) still checks each
// schedule entry's cron and time zone and its bounds, positioned.
func TestValidateOfflineChecksSchedules(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "")
	stdout, stderr, code := execute(t, "validate", "--offline", "--config", "../../examples/invalid/bad-schedule.toml")
	for _, want := range []string{
		`bad-schedule.toml:11:1: target "api": schedule #1: time_zone "Europe/Berln" is not an IANA time zone name`,
		`bad-schedule.toml:13:1: target "api": schedule #1: max_runners (4) must not exceed the target's max_runners (2)`,
	} {
		if code != exitFailure || !strings.Contains(stdout, want) {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 with %q", code, stdout, stderr, want)
		}
	}
	write := files(t)
	bad := write("c.toml", "[[target]]\nname = \"api\"\nrepository = \"acme/api\"\n[[target.schedule]]\ncron = \"* 8-17 * * mon-fry\"\n")
	if stdout, _, code := execute(t, "validate", "--offline", "--config", bad); code != exitFailure ||
		!strings.Contains(stdout, `c.toml:5:1: target "api": schedule #1: cron "* 8-17 * * mon-fry"`) {
		t.Errorf("cron syntax: exit %d, %q", code, stdout)
	}
}
