package engine

import (
	"testing"
	"time"
)

type fixedPacer struct {
	interval time.Duration
	phase    map[string]time.Duration
}

func (p fixedPacer) Interval(string, time.Duration) time.Duration { return p.interval }
func (p fixedPacer) Phase(name string, _ time.Duration) time.Duration {
	return p.phase[name]
}

// TestSlotWait: each loop waits for its own slot (phase + k*interval on one grid), at least gap
// after now, so the passes of many targets fall evenly over the interval.
func TestSlotWait(t *testing.T) {
	p := fixedPacer{interval: 30 * time.Second, phase: map[string]time.Duration{"a": 0, "b": 10 * time.Second, "c": 20 * time.Second}}
	sup := &Supervisor{deps: Deps{Pacer: p}}
	grid := time.Unix(1_800_000_000, 0) // a multiple of 30 s
	for _, tc := range []struct {
		name string
		now  time.Duration // after grid
		gap  time.Duration
		want time.Duration
	}{
		{"a", 0, 0, 0},
		{"b", 0, 0, 10 * time.Second},
		{"c", 0, 0, 20 * time.Second},
		{"b", 11 * time.Second, 0, 29 * time.Second},
		{"a", time.Second, 15 * time.Second, 29 * time.Second}, // the next slot at least half an interval away
		{"a", 16 * time.Second, 15 * time.Second, 44 * time.Second},
		{"c", 19*time.Second + 500*time.Millisecond, 0, 500 * time.Millisecond},
	} {
		l := &loop{sup: sup, key: loopKey{name: tc.name}}
		if got := l.slotWait(grid.Add(tc.now), p.interval, tc.gap); got != tc.want {
			t.Errorf("%s at +%s (gap %s): wait %s, want %s", tc.name, tc.now, tc.gap, got, tc.want)
		}
	}
}
