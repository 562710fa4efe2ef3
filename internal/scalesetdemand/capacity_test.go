package scalesetdemand

import (
	"context"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/scaleset"
	"github.com/runner-manager/runner-manager/journal"
)

// liveStore is a Store whose only answer is the live attempts (ownCapacity reads nothing else).
type liveStore struct {
	scaleset.Store
	live []journal.Attempt
}

func (s liveStore) Live(context.Context) ([]journal.Attempt, error) { return s.live, nil }

// TestOwnCapacityFollowsTheScheduleInForce: the capacity a scale set is told is bounded by the
// max_runners a [[target.schedule]] puts in force, not the target's own, so GitHub assigns no
// job the engine would not launch a runner for until the window ends.
func TestOwnCapacityFollowsTheScheduleInForce(t *testing.T) {
	t.Parallel()
	const body = `[github]
token_file = "/dev/null"
[daemon]
max_runners = 10
[[target]]
name = "web"
repository = "acme/web"
scale_set = "web-set"
max_runners = 6
[[target.schedule]]
cron = "* 0-7 * * *"
time_zone = "UTC"
max_runners = 2
`
	cfg, err := config.LoadBytes("c.toml", []byte(body), config.Options{Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	busy := []journal.Attempt{{ID: "h1-1", Target: "web", State: journal.StateBusy}}
	for _, tc := range []struct {
		name string
		now  time.Time
		want int
	}{
		{"inside the window", time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC), 2},
		{"outside every window", time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC), 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{Store: liveStore{live: busy}, Now: func() time.Time { return tc.now }})
			s.cfg = cfg
			got, gotBusy, takes := s.ownCapacity(context.Background(), "web")
			if got != tc.want || gotBusy != 1 || !takes {
				t.Fatalf("ownCapacity = %d (busy %d, takes %v), want %d (busy 1, takes true)", got, gotBusy, takes, tc.want)
			}
		})
	}
}
