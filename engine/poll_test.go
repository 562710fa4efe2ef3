package engine

import (
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

func TestPollInterval(t *testing.T) {
	d := func(s string) config.Duration { v, _ := time.ParseDuration(s); return config.Duration(v) }
	daemon := config.Daemon{PollInterval: d("30s")}
	hook := &config.Webhook{PollInterval: d("2m")}
	cases := []struct {
		name   string
		cfg    *config.Config
		target config.Target
		want   time.Duration
	}{
		{"daemon default", &config.Config{Daemon: daemon}, config.Target{}, 30 * time.Second},
		{"target overrides daemon", &config.Config{Daemon: daemon}, config.Target{PollInterval: d("5s")}, 5 * time.Second},
		{"webhook slows the reconcile poll", &config.Config{Daemon: daemon, Webhook: hook}, config.Target{}, 2 * time.Minute},
		{"target overrides webhook", &config.Config{Daemon: daemon, Webhook: hook}, config.Target{PollInterval: d("10s")}, 10 * time.Second},
		{"webhook without its own interval", &config.Config{Daemon: daemon, Webhook: &config.Webhook{}}, config.Target{}, 30 * time.Second},
		{"nothing set", &config.Config{}, config.Target{}, 30 * time.Second},
	}
	for _, c := range cases {
		if got := PollInterval(c.cfg, c.target); got != c.want {
			t.Errorf("%s: pollInterval = %s, want %s", c.name, got, c.want)
		}
	}
}

// TestRunnerThatEndedOnItsOwnIsNotDeleted: a just-in-time runner whose process ends with status
// 0 by itself has run its one job, and GitHub removed its registration when the job completed,
// so it is concluded without a DELETE even when the pass that sees the end read no runner list
// (poll mode: the whole job fell between two passes, and the exit check's light pass reads
// nothing). Were the registration still there, the next full pass lists it and deletes it as an
// orphan, so nothing is left.
func TestRunnerThatEndedOnItsOwnIsNotDeleted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		removed bool // GitHub removed the registration (the runner ran its job)
	}{{"after its job", true}, {"still registered", false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.s.opts.ExitCheck = 2 * time.Second
			h.w.setQueued(idA, 1)
			h.begin(cfgOf(baseTarget("a"))) // launches the job's runner
			if got := h.byState("a"); got[string(journal.StateStarted)] != 1 {
				t.Fatalf("states after the first pass = %v, want one started runner", got)
			}
			ended := h.runnerNames("a", journal.StateStarted)[0]
			if tc.removed {
				h.w.takeJobs(idA)
				h.w.finishJobs(idA)
			} else {
				h.w.exitRunners(idA, 0)
			}
			before := h.githubCalls()
			h.tick(2*time.Second, 1, "a") // the exit check's light pass
			if got := h.byState("a"); got[string(journal.StateCleaned)] != 1 {
				t.Fatalf("states after the exit check = %v, want the ended runner cleaned", got)
			}
			if after := h.githubCalls(); after["DeleteRunner"] != before["DeleteRunner"] || after["Runners"] != before["Runners"] {
				t.Fatalf("the ended runner cost GitHub calls: %v -> %v", before, after)
			}
			h.tick(poll, 1, "a") // a full pass: what the target owns changed, so it lists the runners
			deletes := h.githubCalls()["DeleteRunner"] - before["DeleteRunner"]
			if want := map[bool]int{true: 0, false: 1}[tc.removed]; deletes != want {
				t.Fatalf("DELETEs after the full pass = %d, want %d", deletes, want)
			}
			for _, r := range h.w.sortedRegs() {
				if r.name == ended {
					t.Fatalf("the ended runner %s is still registered", ended)
				}
			}
		})
	}
}
