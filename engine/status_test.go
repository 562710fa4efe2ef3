package engine

import (
	"errors"
	"testing"
	"time"
)

func TestStatusReportsTargetsReloadsAndEvents(t *testing.T) {
	h := twoRunnersOneBusy(t)
	h.w.setQueued("repo:acme/a", 0)
	h.tick(poll, 1, "a")
	st := h.s.Status()
	if len(st.Targets) != 1 {
		t.Fatalf("targets = %+v", st.Targets)
	}
	ts := st.Targets[0]
	if ts.Owned != 2 || ts.Busy != 1 || ts.Idle != 1 || ts.Demand != 0 || ts.Draining || ts.Identity != "repo:acme/a" || ts.LastPass.IsZero() {
		t.Fatalf("target status = %+v", ts)
	}
	if !st.LastReload.OK || st.LastReload.Report == nil || st.LastReload.Report.Added[0] != "a" || st.Generation != 1 {
		t.Fatalf("last reload = %+v", st.LastReload)
	}
	kinds := map[EventKind]int{}
	for _, ev := range st.Events {
		kinds[ev.Kind]++
	}
	if kinds[EventStarted] != 2 || kinds[EventBusy] != 1 || kinds[EventReload] != 1 || kinds[EventLoop] != 1 {
		t.Fatalf("events by kind = %v", kinds)
	}

	h.s.ReloadFailed(errors.New("config.toml:3:7: unknown key"))
	st = h.s.Status()
	if st.LastReload.OK || st.LastReload.Error == "" || st.Generation != 1 {
		t.Fatalf("a rejected reload must show and change nothing: %+v", st.LastReload)
	}
	if last := st.Events[len(st.Events)-1]; last.Kind != EventReloadFailed {
		t.Fatalf("last event = %+v", last)
	}
}

func TestGitHubContactRecordedAtMostOncePerMinute(t *testing.T) {
	h := startA(t, 0)
	first := h.j.LastGitHubContact()
	if !first.Equal(h.clock.Now()) {
		t.Fatalf("contact after the first pass = %v, want %v", first, h.clock.Now())
	}
	h.tick(poll, 1, "a")
	if got := h.j.LastGitHubContact(); !got.Equal(first) {
		t.Fatalf("recorded again after 30 s: %v", got)
	}
	h.tick(poll, 1, "a")
	if got := h.j.LastGitHubContact(); !got.Equal(first.Add(time.Minute)) {
		t.Fatalf("contact after a minute = %v", got)
	}
	h.w.setFail("repo:acme/a", errOffline)
	h.tick(2*poll, 1, "a")
	if got := h.j.LastGitHubContact(); !got.Equal(first.Add(time.Minute)) {
		t.Fatalf("a failed pass recorded a contact: %v", got)
	}
}

// TestGitHubContactRecordedPerAccount: the journal's contact is recorded under each target's
// account and throttled per account, so an account whose credential broke keeps its last contact
// while another account's answers move only their own (both recorded in the same minute, which a
// host-wide throttle would not allow).
func TestGitHubContactRecordedPerAccount(t *testing.T) {
	h := newHarness(t)
	a, b := baseTarget("a"), baseTarget("b")
	b.Account = "globex"
	h.begin(cfgOf(a, b))
	first := h.clock.Now()
	if d, g := h.j.GitHubContactOf("default"), h.j.GitHubContactOf("globex"); !d.Equal(first) || !g.Equal(first) {
		t.Fatalf("contacts after the first passes: default %v, globex %v; want both %v", d, g, first)
	}
	h.w.setFail(b.Identity(), errOffline)
	h.tick(poll, 2, "a", "b") // b's pass fails
	h.tick(poll, 2, "a")
	if d := h.j.GitHubContactOf("default"); !d.Equal(first.Add(time.Minute)) {
		t.Fatalf("default's contact = %v, want %v", d, first.Add(time.Minute))
	}
	if g := h.j.GitHubContactOf("globex"); !g.Equal(first) {
		t.Fatalf("globex failed since %v but its contact moved to %v", first, g)
	}
}
