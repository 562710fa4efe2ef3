package engine

import (
	"testing"
	"time"
)

// fixedPacer plans every target at interval; target name's passes fall at index[name]/n of it, and
// first passes spread over window.
type fixedPacer struct {
	interval time.Duration
	n        int
	index    map[string]int
	window   time.Duration
}

func (p fixedPacer) Interval(string, time.Duration) time.Duration { return p.interval }
func (p fixedPacer) Phase(name string, interval time.Duration) time.Duration {
	return interval * time.Duration(p.index[name]) / time.Duration(p.n)
}
func (p fixedPacer) StartWindow() time.Duration { return p.window }

// TestSlotWait: each loop waits for its own slot (phase + k*interval on one grid), at least gap
// after now, so the passes of many targets fall evenly over the interval.
func TestSlotWait(t *testing.T) {
	p := fixedPacer{interval: 30 * time.Second, n: 3, index: map[string]int{"a": 0, "b": 1, "c": 2}}
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

// TestFirstPassWaitsOnlyForTheCeiling: with a pacer, first passes (recovery's) spread over the
// time the governor's ceiling needs for all of them, not over the poll interval (10 minutes in
// webhook mode): the first target starts at once, the second half-way through a 2 s window, not
// half-way through the interval. Later passes keep to the interval's slots.
func TestFirstPassWaitsOnlyForTheCeiling(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window time.Duration
		wait   time.Duration // of b, the second of two targets
	}{
		{"window shorter than the interval", 2 * time.Second, time.Second},
		{"window longer than the interval", time.Hour, 5 * time.Minute}, // the interval bounds it
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.pacer = fixedPacer{interval: 10 * time.Minute, n: 2, index: map[string]int{"a": 0, "b": 1}, window: tc.window}
			h.s = h.newSupervisor()
			h.apply(cfgOf(baseTarget("a"), baseTarget("b")))
			h.run()
			h.waitPass("a", 0) // at once: no fake time passed
			h.settle(2)
			if n := h.passCount("b"); n != 0 {
				t.Fatalf("b made %d passes before its place in the start window", n)
			}
			h.clock.Advance(tc.wait - time.Millisecond)
			h.settle(2)
			if n := h.passCount("b"); n != 0 {
				t.Fatalf("b made %d passes %s before its place", n, time.Millisecond)
			}
			h.clock.Advance(time.Millisecond)
			h.waitPass("b", 0)
			h.settle(2)
			if n := h.w.callCount("Runners", "repo:acme/b"); n != 1 {
				t.Fatalf("b's first pass listed runners %d times, want 1 (recovery)", n)
			}
			// a's second pass is at its next slot at least a tenth of an interval after its
			// first began: 10 minutes from the start.
			h.clock.Advance(10*time.Minute - tc.wait - time.Millisecond)
			h.settle(2)
			if n := h.passCount("a"); n != 1 {
				t.Fatalf("a made %d passes before its second slot, want 1", n)
			}
			h.tick(time.Millisecond, 2, "a")
		})
	}
}

// TestNextPassAtMostAnIntervalAfterTheLast: in poll mode a job queued just after a pass read the
// jobs waits at most the target's interval in force (the pacer's, stretched or not) plus a tenth
// of it: the next full pass counts from the start of the last, not its end. A pass that spent two
// thirds of an interval (here in its read; in the bench, launching for a burst) used to push the
// next one to the first slot half an interval after its end (a whole slot later), or a whole
// interval after its end without a pacer. A pass woken off its slot (a reload) just before a slot does not read again at that slot.
func TestNextPassAtMostAnIntervalAfterTheLast(t *testing.T) {
	stretched := 2 * poll // the governor's stretch of the configured 30 s
	for _, tc := range []struct {
		name      string
		pacer     Pacer
		interval  time.Duration // in force
		afterWake time.Duration // from a pass woken 2 s before a slot to the next full pass
	}{
		{"no pacer", nil, poll, poll},
		{"pacer", fixedPacer{interval: poll, n: 1, index: map[string]int{"a": 0}, window: time.Second}, poll, poll + 2*time.Second},
		{"pacer, stretched", fixedPacer{interval: stretched, n: 1, index: map[string]int{"a": 0}, window: time.Second}, stretched, stretched + 2*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.pacer = tc.pacer
			h.s = h.newSupervisor()
			h.begin(cfgOf(baseTarget("a"))) // at 09:00:00, a slot of every grid here
			// The second pass starts one interval later and spends two thirds of one in its read.
			slow := tc.interval * 2 / 3
			block := h.w.blockQueued(idA)
			reads, passes := h.w.callCount("Queued", idA), h.passCount("a")
			h.settle(1)
			h.clock.Advance(tc.interval)
			h.waitCalls("Queued", idA, reads)
			h.clock.Advance(slow)
			close(block)
			h.waitPass("a", passes)
			// The third is due one interval after the second began.
			h.settle(1)
			h.clock.Advance(tc.interval - slow - time.Millisecond)
			h.settle(1)
			if n := h.passCount("a"); n != passes+1 {
				t.Fatalf("a made %d passes before one interval (%s) after the slow pass began, want %d", n, tc.interval, passes+1)
			}
			h.tick(time.Millisecond, 1, "a")
			// Woken 2 s before its next slot, within a tenth of an interval of it, the target is
			// not read again at the slot but at the one after (without a pacer, an interval later).
			h.clock.Advance(tc.interval - 2*time.Second)
			h.poke("a", 1)
			woken := h.passCount("a")
			h.clock.Advance(tc.afterWake - time.Millisecond)
			h.settle(1)
			if n := h.passCount("a"); n != woken {
				t.Fatalf("a made %d passes within %s of its woken pass, want %d", n, tc.afterWake, woken)
			}
			h.tick(time.Millisecond, 1, "a")
		})
	}
}
