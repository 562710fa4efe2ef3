package engine

import (
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

// TestScheduleWindowOpensAtItsMinute: each pass plans with the min_idle in force at its clock time,
// and the next pass is due at the schedule's next change, so a window is acted on at the minute it
// opens or closes, not a poll interval later (45 minutes here, so no pass would fall on it by
// chance). Fake time crosses DST changes: Europe/Berlin spring forward (2027-03-28 02:00 CET ->
// 03:00 CEST) and fall back (2027-10-31 03:00 CEST -> 02:00 CET), America/New_York's spring forward
// over a weekend (2027-03-14), a wall minute that does not exist and an hour that happens twice.
func TestScheduleWindowOpensAtItsMinute(t *testing.T) {
	type step struct {
		advance time.Duration
		started int // idle runners after the pass at that time
	}
	for _, tc := range []struct {
		name       string
		start      time.Time
		cron, zone string
		poll       time.Duration
		first      int // started after the first pass
		steps      []step
	}{
		{"opens and closes at its minute", time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), "* 10-11 * * *", "UTC", 45 * time.Minute, 0,
			[]step{{45 * time.Minute, 0}, {15 * time.Minute, 2}, {45 * time.Minute, 2}, {45 * time.Minute, 2}, {30 * time.Minute, 0}}},
		// 01:30 CET: 03:00 CEST is 30 real minutes away, and the window is one real hour long.
		{"berlin spring forward", time.Date(2027, 3, 28, 0, 30, 0, 0, time.UTC), "* 3 * * *", "Europe/Berlin", 45 * time.Minute, 0,
			[]step{{30 * time.Minute, 2}, {45 * time.Minute, 2}, {15 * time.Minute, 0}}},
		// 02:30 does not exist in Berlin on 2027-03-28: no pass opens it (01:45 CET, 03:30 CEST).
		{"berlin a minute that does not exist", time.Date(2027, 3, 28, 0, 0, 0, 0, time.UTC), "30 2 * * *", "Europe/Berlin", 45 * time.Minute, 0,
			[]step{{45 * time.Minute, 0}, {45 * time.Minute, 0}, {45 * time.Minute, 0}}},
		// 02:10 CEST: the window "* 2" lasts until 03:00 CET, two real hours, the second 02:xx included.
		{"berlin fall back: an hour twice", time.Date(2027, 10, 31, 0, 10, 0, 0, time.UTC), "* 2 * * *", "Europe/Berlin", 45 * time.Minute, 2,
			[]step{{45 * time.Minute, 2}, {45 * time.Minute, 2}, {20 * time.Minute, 0}}},
		// Friday 17:30 EST: closes at 18:00 EST, opens Monday 08:00 EDT (12:00 UTC, not 13:00).
		{"new york spring forward over a weekend", time.Date(2027, 3, 12, 22, 30, 0, 0, time.UTC), "* 8-17 * * mon-fri", "America/New_York", 24 * time.Hour, 2,
			[]step{{30 * time.Minute, 0}, {24 * time.Hour, 0}, {24 * time.Hour, 0}, {13 * time.Hour, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.clock.Advance(tc.start.Sub(h.clock.Now()))
			a := baseTarget("a")
			a.PollInterval = config.Duration(tc.poll)
			a.Schedule = []config.Schedule{{Cron: tc.cron, TimeZone: tc.zone, MinIdle: 2}}
			h.begin(cfgOf(a))
			if got := h.byState("a")["started"]; got != tc.first {
				t.Fatalf("first pass at %s: %d started, want %d", h.clock.Now(), got, tc.first)
			}
			for i, s := range tc.steps {
				h.tick(s.advance, 1, "a") // fails unless a pass falls exactly on the step
				if got := h.byState("a")["started"]; got != s.started {
					t.Fatalf("step %d, pass at %s: %d started, want %d", i+1, h.clock.Now(), got, s.started)
				}
			}
		})
	}
}

// TestScheduleMaxRunnersInForce: a schedule's lower max_runners bounds the pass's launches while it
// is in force, and the target's own applies again at the minute the window closes.
func TestScheduleMaxRunnersInForce(t *testing.T) {
	h := newHarness(t) // Sunday 2026-03-01 09:00 UTC
	a := baseTarget("a")
	a.PollInterval = config.Duration(45 * time.Minute)
	a.Schedule = []config.Schedule{{Cron: "* 9 * * *", MinIdle: 0, MaxRunners: 1}}
	h.w.setQueued("repo:acme/a", 3)
	h.begin(cfgOf(a))
	if got := h.byState("a")["started"]; got != 1 {
		t.Fatalf("inside the window: %d started for 3 queued jobs, want 1 (the schedule's max_runners)", got)
	}
	h.tick(45*time.Minute, 1, "a")
	if got := h.byState("a")["started"]; got != 1 {
		t.Fatalf("09:45, still inside: %d started, want 1", got)
	}
	h.tick(15*time.Minute, 1, "a")
	if got := h.byState("a")["started"]; got != 3 {
		t.Fatalf("10:00, outside every window: %d started, want 3 (the target's max_runners is 4)", got)
	}
}

// TestScheduleBoundClaimsNoMoreSlots: a target held to its schedule's lower max_runners claims no
// host slots beyond it (room.go), so another target that wants them gets them.
func TestScheduleBoundClaimsNoMoreSlots(t *testing.T) {
	h := newHarness(t) // Sunday 2026-03-01 09:00 UTC
	a, b := baseTarget("a"), baseTarget("b")
	a.Schedule = []config.Schedule{{Cron: "* 9 * * *", MinIdle: 0, MaxRunners: 1}}
	cfg := cfgOf(a, b)
	cfg.Daemon.MaxRunners = 4
	h.w.setQueued("repo:acme/a", 4)
	h.begin(cfg)
	h.poke("a", 2) // a holds its bound now: its claim must be nothing more
	h.w.setQueued("repo:acme/b", 4)
	h.poke("b", 2)
	if got := h.byState("b")["started"]; got != 3 {
		t.Fatalf("b started %d of the host's 3 free slots: a claimed slots its schedule does not let it use", got)
	}
}

// TestScheduleReloadAppliesAtOnce: a schedule added by a reload is a next-pass change, and the
// reload wakes the target's loop, so the entry in force is acted on without waiting for time to pass.
func TestScheduleReloadAppliesAtOnce(t *testing.T) {
	h := newHarness(t) // Sunday 2026-03-01 09:00 UTC
	a := baseTarget("a")
	a.PollInterval = config.Duration(45 * time.Minute)
	h.begin(cfgOf(a))
	a.Schedule = []config.Schedule{{Cron: "* 9 * * sun", MinIdle: 2}}
	rep := h.apply(cfgOf(a))
	if len(rep.Changed) != 1 || rep.Changed[0].Name != "a" {
		t.Fatalf("reload report %+v: want target a changed in place", rep)
	}
	h.waitPass("a", 1)
	h.settle(1)
	if got := h.byState("a")["started"]; got != 2 {
		t.Fatalf("after the reload, at the same instant: %d started, want 2 (the entry's min_idle)", got)
	}
}

// TestScheduleMinIdleIsTheFleets: in a fleet the min_idle in force is the fleet's warm pool, as
// min_idle is: a peer's idle runner counts toward it, so this host starts only what is missing,
// and none once the window closes.
func TestScheduleMinIdleIsTheFleets(t *testing.T) {
	f := &fakeFleet{peers: []PeerSupply{{Host: "h-a", Idle: 1}}}
	h := newHarness(t) // Sunday 2026-03-01 09:00 UTC
	h.s.deps.Fleet = f
	a := baseTarget("a")
	a.PollInterval = config.Duration(45 * time.Minute)
	a.Schedule = []config.Schedule{{Cron: "* 9 * * *", MinIdle: 2}}
	h.begin(cfgOf(a))
	if got := h.byState("a")["started"]; got != 1 {
		t.Fatalf("inside the window: %d started, want 1 (min_idle 2 in force, 1 idle on a peer)", got)
	}
	h.tick(45*time.Minute, 1, "a")
	h.tick(15*time.Minute, 1, "a") // 10:00: the window closed
	if got := h.byState("a")["started"]; got != 0 {
		t.Fatalf("outside the window: %d idle runners kept, want 0 (the target's own min_idle)", got)
	}
}
