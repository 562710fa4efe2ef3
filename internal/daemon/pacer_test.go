package daemon

import (
	"cmp"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

// TestIdleEvery: an idle repository is read every idle_poll_interval / poll interval passes,
// rounded, at least every pass; absent, every 4th.
func TestIdleEvery(t *testing.T) {
	d := func(v time.Duration) config.Duration { return config.Duration(v) }
	for _, tc := range []struct {
		name   string
		daemon config.Daemon
		target config.Target
		want   int
	}{
		{"default", config.Daemon{PollInterval: d(30 * time.Second)}, config.Target{}, 4},
		{"daemon's", config.Daemon{PollInterval: d(30 * time.Second), IdlePollInterval: d(5 * time.Minute)}, config.Target{}, 10},
		{"rounded", config.Daemon{PollInterval: d(30 * time.Second), IdlePollInterval: d(100 * time.Second)}, config.Target{}, 3},
		{"target's", config.Daemon{PollInterval: d(30 * time.Second), IdlePollInterval: d(5 * time.Minute)}, config.Target{IdlePollInterval: d(time.Minute)}, 2},
		{"never more often than the poll", config.Daemon{PollInterval: d(30 * time.Second), IdlePollInterval: d(time.Minute)}, config.Target{PollInterval: d(5 * time.Minute)}, 1},
	} {
		p := &pacer{}
		p.set(&config.Config{Daemon: tc.daemon, Targets: []config.Target{tc.target}})
		if got := p.idleEvery(tc.target); got != tc.want {
			t.Errorf("%s: every %d passes, want %d", tc.name, got, tc.want)
		}
	}
}

// TestPacerPlansEachAccountAgainstItsCeiling: an account whose targets do not fit its own
// points_per_minute stretches those targets' intervals only; the other account's keep theirs.
func TestPacerPlansEachAccountAgainstItsCeiling(t *testing.T) {
	targets := func(account string, n int) []config.Target {
		var out []config.Target
		for i := range n {
			out = append(out, config.Target{Name: fmt.Sprintf("%s-%d", account, i), Repository: "acme/r" + strconv.Itoa(i),
				Account: account, MaxRunners: 1, PollInterval: config.Duration(10 * time.Second)})
		}
		return out
	}
	for _, tc := range []struct {
		name              string
		github, globex    int // points_per_minute
		stretched, intact string
	}{
		{"the [[account]] is over its ceiling", 600, 60, "globex", ""},
		{"[github] is over its ceiling", 60, 600, "", "globex"},
	} {
		cfg := &config.Config{GitHub: config.GitHub{PointsPerMinute: tc.github},
			Accounts: []config.Account{{Name: "globex", GitHub: config.GitHub{PointsPerMinute: tc.globex}}},
			Targets:  append(targets("", 10), targets("globex", 10)...)}
		p := &pacer{gh: newGitHub(cfg, nil)}
		p.set(cfg)
		base := 10 * time.Second
		if iv := p.Interval(tc.stretched+"-0", base); iv <= base {
			t.Errorf("%s: %s-0 polls every %s, want stretched beyond %s", tc.name, tc.stretched, iv, base)
		}
		if iv := p.Interval(tc.intact+"-0", base); iv != base {
			t.Errorf("%s: %s-0 polls every %s, want its configured %s", tc.name, tc.intact, iv, base)
		}
		plans := p.all()
		if acct := cmp.Or(tc.intact, config.DefaultAccount); plans[acct].Stretch != 1 {
			t.Errorf("%s: account %s's stretch %v, want 1", tc.name, acct, plans[acct].Stretch)
		}
	}
}
