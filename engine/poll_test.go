package engine

import (
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
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
