package daemon

import (
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
