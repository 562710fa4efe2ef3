package status

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRenderTop: frames of `runner-manager top` at the smallest, the SSH-usual and a large
// terminal, in and out of a fleet, with one account and with two (a governor line each); every frame is exactly its height and no line is wider.
func TestRenderTop(t *testing.T) {
	fleet := fixture()
	fleet.Fleet = &Fleet{Name: "ci", Host: "b", Joined: true,
		Hosts:   []FleetHost{{Name: "a"}, {Name: "b"}, {Name: "c"}},
		Targets: []FleetTarget{{Name: "web", Leader: "b"}, {Name: "infra", Leader: "a"}}}
	fleet.GitHubPolling = &Polling{PointsPerMinute: 600, NeedPerMinute: 18, Stretch: 1, UsedPerMinute: 42,
		Fleet: &PollingFleet{Hosts: 3, SharePerMinute: 200}}
	for _, tc := range []struct {
		name          string
		snap          Snapshot
		width, height int
	}{
		{"top-80x24.txt", fixture(), 80, 24},
		{"top-40x10.txt", fixture(), 40, 10},
		{"top-120x40.txt", fixture(), 120, 40},
		{"top-fleet-80x24.txt", fleet, 80, 24},
		{"top-accounts-80x24.txt", twoAccounts(), 80, 24},
		{"top-accounts-contact-80x24.txt", threeAccounts(), 80, 24},
		{"top-fresh-80x24.txt", Snapshot{Version: "0.3.1", PID: 1, StartedAt: now, MaxRunners: 4}, 80, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frame := RenderTop(tc.snap, now, tc.width, tc.height)
			lines := strings.Split(frame, "\n")
			if len(lines) != tc.height {
				t.Errorf("%d lines, want %d", len(lines), tc.height)
			}
			for i, l := range lines {
				if n := len([]rune(l)); n > tc.width {
					t.Errorf("line %d is %d wide, more than %d: %q", i+1, n, tc.width, l)
				}
			}
			checkGolden(t, tc.name, []byte(frame+"\n"))
		})
	}
}

// TestRenderTopKeepsLatestEvents: with more events than rows, the newest are shown.
func TestRenderTopKeepsLatestEvents(t *testing.T) {
	s := fixture()
	s.Events = nil
	for i := range 50 {
		s.Events = append(s.Events, Event{At: ago(time.Duration(50-i) * time.Second), Kind: "reload", Message: fmt.Sprintf("event %d", i)})
	}
	frame := RenderTop(s, now, 80, 24)
	if !strings.Contains(frame, "event 49") || strings.Contains(frame, "event 0\n") {
		t.Fatalf("the frame does not end with the newest events:\n%s", frame)
	}
}
