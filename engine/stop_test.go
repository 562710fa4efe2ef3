package engine

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/runner-manager/runner-manager/config"
)

// Issue 28 item 4: a stop costs GitHub reads by what this run registered, not by its targets.
// Of 40 targets, only t00 sent a registration request whose answer was not what its journal
// record says (a 409: an earlier try had landed); the 39 others own nothing. The stop reads no
// runner list of the 39, and says nothing about them; t00's identity is swept once every loop
// ended. An empty loop knows it owns nothing from its last pass, so the stop does not even read
// the journal once per target.
func TestStopReadsOnlyDoubtedTargets(t *testing.T) {
	h := newHarness(t)
	var ts []config.Target
	for i := range 40 {
		ts = append(ts, baseTarget(fmt.Sprintf("t%02d", i)))
	}
	h.w.nameTaken["runner-manager-h1-0000000001"] = true
	h.w.setQueued("repo:acme/t00", 1)
	h.begin(cfgOf(ts...))
	lists := map[string]int{}
	for _, tg := range ts {
		lists[tg.Name] = h.w.callCount("Runners", tg.Identity())
	}
	var reads atomic.Int32 // journal reads from here on
	h.j.Fail = func(op string) error {
		if op == "live" {
			reads.Add(1)
		}
		return nil
	}
	rep, err := h.s.Shutdown(context.Background())
	if err != nil || rep.TimedOut {
		t.Fatalf("Shutdown = %+v, %v", rep, err)
	}
	h.joinRun()
	for _, tg := range ts[1:] {
		if n := h.w.callCount("Runners", tg.Identity()) - lists[tg.Name]; n != 0 {
			t.Errorf("target %s owns nothing and registered nothing in doubt; the stop read its runners %d times", tg.Name, n)
		}
		for _, ev := range h.s.Status().Events {
			if ev.Target == tg.Name && ev.Kind == EventLoop && !strings.HasPrefix(ev.Message, "target loop started") {
				t.Errorf("the stop reported on empty target %s: %q", tg.Name, ev.Message)
			}
		}
	}
	if n := reads.Load(); n >= int32(len(ts)) {
		t.Errorf("the stop read the journal %d times for %d targets: an empty loop needs no read", n, len(ts))
	}
	if n := h.w.callCount("Runners", "repo:acme/t00") - lists["t00"]; n < 1 {
		t.Errorf("the doubted target t00 was not swept at the stop")
	}
	h.w.checkPromises()
}
