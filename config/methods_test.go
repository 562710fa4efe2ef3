package config

import (
	"testing"
	"time"
)

// TestPollIntervals: a target's poll interval is its own, else the webhook's slow poll, else the
// daemon's; its idle interval is its own, else the daemon's, else 4 x its poll interval, and never
// shorter than its poll interval.
func TestPollIntervals(t *testing.T) {
	d := func(s string) Duration { v, _ := time.ParseDuration(s); return Duration(v) }
	daemon := Daemon{PollInterval: d("30s")}
	for _, tc := range []struct {
		name       string
		cfg        Config
		target     Target
		poll, idle time.Duration
	}{
		{"defaults", Config{Daemon: daemon}, Target{}, 30 * time.Second, 2 * time.Minute},
		{"webhook", Config{Daemon: daemon, Webhook: &Webhook{PollInterval: d("2m")}}, Target{}, 2 * time.Minute, 8 * time.Minute},
		{"target's own poll", Config{Daemon: daemon, Webhook: &Webhook{PollInterval: d("2m")}}, Target{PollInterval: d("10s")}, 10 * time.Second, 40 * time.Second},
		{"daemon's idle", Config{Daemon: Daemon{PollInterval: d("30s"), IdlePollInterval: d("5m")}}, Target{}, 30 * time.Second, 5 * time.Minute},
		{"target's own idle", Config{Daemon: Daemon{PollInterval: d("30s"), IdlePollInterval: d("5m")}}, Target{IdlePollInterval: d("1m")}, 30 * time.Second, time.Minute},
		{"daemon's idle below the target's poll", Config{Daemon: Daemon{PollInterval: d("30s"), IdlePollInterval: d("1m")}}, Target{PollInterval: d("3m")}, 3 * time.Minute, 3 * time.Minute},
	} {
		poll := tc.cfg.PollIntervalOf(tc.target)
		if idle := tc.cfg.IdlePollIntervalOf(tc.target, poll); poll != tc.poll || idle != tc.idle {
			t.Errorf("%s: poll %s idle %s, want %s and %s", tc.name, poll, idle, tc.poll, tc.idle)
		}
	}
}
