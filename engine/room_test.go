package engine

import (
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// live counts target's live attempts and its started or busy ones.
func (h *harness) live(target string) (live, running int) {
	for _, a := range h.j.All() {
		if a.Target != target || a.State.Terminal() {
			continue
		}
		live++
		if a.State == journal.StateStarted || a.State == journal.StateBusy {
			running++
		}
	}
	return live, running
}

// Issue 28 item 3, the starvation case: a daemon was killed while two attempts of b were between
// their planned record and the registration's answer. The restarted daemon finds b's 17 jobs and
// a's 30 waiting on a host of 8 slots. Each target gets its share (4, round-robin) at once, though a
// passes first: a does not take every slot b's attempts leave free. b's two killed attempts
// hold their slots only until RegistrationTimeout after the start, not the 2-minute call timeout
// after their planned record, and b then starts its whole share while a's runners still run.
func TestStarvedTargetGetsItsShare(t *testing.T) {
	h := newHarness(t)
	a, b := baseTarget("a"), baseTarget("b")
	a.MaxRunners, b.MaxRunners = 8, 8
	killed := h.clock.Now().Add(-time.Minute) // planned a minute before the restart
	for i, id := range []string{"h1-91", "h1-92"} {
		h.j.Put(journal.Attempt{ID: id, Target: "b", Policy: fingerprint(b), Slot: 6 + i, RunnerName: journal.RunnerNamePrefix + id,
			State: journal.StatePlanned, CreatedAt: killed, UpdatedAt: killed})
	}
	h.w.setQueued("repo:acme/a", 30)
	h.w.setQueued("repo:acme/b", 17)
	slow := h.w.blockQueued("repo:acme/b") // a passes first
	h.apply(cfgOf(a, b))
	h.run()
	h.waitPass("a", 0)
	close(slow)
	h.waitPass("b", 0)
	h.settle(2)
	aLive, _ := h.live("a")
	bLive, bRunning := h.live("b")
	if aLive > 4 || bRunning < 2 {
		t.Fatalf("after the first passes: a holds %d slots, b runs %d runners (%d slots), want a at most its share 4 and b 2 runners beside its 2 killed attempts", aLive, bRunning, bLive)
	}
	h.w.takeJobs("repo:acme/a") // a's runners stay busy: the slots they hold are not freed
	h.w.takeJobs("repo:acme/b")
	h.tick(RegistrationTimeout, 2, "a", "b") // the first list RegistrationTimeout after the start
	for _, id := range []string{"h1-91", "h1-92"} {
		if got := h.j.History(id); len(got) != 2 || got[1] != journal.StateCleaned {
			t.Fatalf("killed attempt %s %s after the start: %v, want dropped (nothing landed)", id, RegistrationTimeout, got)
		}
	}
	if _, bRunning = h.live("b"); bRunning != 4 {
		t.Fatalf("b runs %d runners %s after the start, want its share of 4", bRunning, RegistrationTimeout)
	}
	if aLive, _ = h.live("a"); aLive > 4 {
		t.Fatalf("a holds %d slots, more than its share of 4", aLive)
	}
	if h.j.MaxHostLive() > 8 {
		t.Fatalf("the host held %d live attempts, more than its 8 slots", h.j.MaxHostLive())
	}
	h.w.checkPromises()
}

// A target alone on the host, or beside targets that want nothing, may take every slot up to its
// max_runners: fairness holds a target back only while another's jobs wait.
func TestFairShareOnlyWhenTargetsCompete(t *testing.T) {
	h := newHarness(t)
	a := baseTarget("a")
	a.MaxRunners = 8
	var ts []config.Target
	ts = append(ts, a)
	for _, n := range []string{"b", "c", "d"} {
		ts = append(ts, baseTarget(n))
	}
	h.w.setQueued("repo:acme/a", 20)
	h.begin(cfgOf(ts...))
	h.tick(poll, 4, "a", "b", "c", "d")
	if _, running := h.live("a"); running != 8 {
		t.Fatalf("a runs %d runners, want all 8 slots: no other target wants one", running)
	}
}
