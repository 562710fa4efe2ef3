package engine

import (
	"reflect"
	"testing"
	"time"
)

// TestStalledNamesAWedgedLoopOnly: a loop that waits for its next pass is healthy however long it
// waits; one whose pass has been stuck past the bound is named, and is no longer once the pass
// ends. The daemon's watchdog withholds systemd's WATCHDOG=1 while any is named.
func TestStalledNamesAWedgedLoopOnly(t *testing.T) {
	const bound = 5 * time.Minute
	h := startA(t, 0)
	h.clock.Advance(poll / 2) // parked between passes, for a while
	if got := h.s.Stalled(bound); len(got) != 0 {
		t.Fatalf("Stalled of a parked loop = %v, want none", got)
	}
	block, passes := h.blockNextRead() // the next pass hangs in its demand read
	if got := h.s.Stalled(bound); len(got) != 0 {
		t.Fatalf("Stalled at the start of a pass = %v, want none", got)
	}
	h.clock.Advance(bound + time.Second)
	if got := h.s.Stalled(bound); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("Stalled after the pass hung %s = %v, want [a]", bound+time.Second, got)
	}
	close(block)
	h.waitPass("a", passes)
	h.settle(1)
	if got := h.s.Stalled(bound); len(got) != 0 {
		t.Fatalf("Stalled once the pass ended = %v, want none", got)
	}
}
