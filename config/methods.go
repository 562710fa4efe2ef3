package config

import (
	"time"

	"github.com/runner-manager/runner-manager/internal/redact"
)

// RedactedValue replaces every secret in a Redacted copy.
const RedactedValue = redact.Redacted

// EnabledTargets returns the targets that should have a running loop, in file order.
func (c *Config) EnabledTargets() []Target {
	var out []Target
	for _, t := range c.Targets {
		if t.IsEnabled() {
			out = append(out, t)
		}
	}
	return out
}

// Target returns the target called name and whether it exists (enabled or not).
func (c *Config) Target(name string) (Target, bool) {
	if i, ok := c.byName[name]; ok && i < len(c.Targets) && c.Targets[i].Name == name {
		return c.Targets[i], true
	}
	// A Config built by hand has no index; a miss is rare (a removed target's draining loop).
	for _, t := range c.Targets {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// Redacted returns a deep copy safe to print: target env values become RedactedValue (they may hold
// secrets; their names stay visible), and so does userinfo in every api_url. Credential paths are kept: a path is not a secret, and the
// files themselves are never read into a Config.
func (c *Config) Redacted() *Config {
	out := *c
	if c.Webhook != nil {
		w := *c.Webhook
		out.Webhook = &w
	}
	if c.Fleet != nil {
		f := *c.Fleet
		f.EtcdEndpoints = append([]string(nil), c.Fleet.EtcdEndpoints...)
		out.Fleet = &f
	}
	if c.GitHub.DeviceFlow != nil {
		d := *c.GitHub.DeviceFlow
		out.GitHub.DeviceFlow = &d
	}
	out.GitHub.APIURL = redact.URL(c.GitHub.APIURL)
	out.Accounts = make([]Account, len(c.Accounts))
	for i, a := range c.Accounts {
		a.APIURL, a.DeviceFlow = redact.URL(a.APIURL), clonePtr(a.DeviceFlow)
		out.Accounts[i] = a
	}
	if c.Accounts == nil {
		out.Accounts = nil
	}
	out.Warnings = append([]Problem(nil), c.Warnings...)
	out.Targets = make([]Target, len(c.Targets))
	for i, t := range c.Targets {
		t.Labels = append([]string(nil), t.Labels...)
		t.Schedule = append([]Schedule(nil), t.Schedule...)
		if t.Env != nil {
			env := make(map[string]string, len(t.Env))
			for k := range t.Env {
				env[k] = RedactedValue
			}
			for _, k := range c.fileEnv[i] {
				delete(env, k) // env_file's: printed back, they would clash with it
			}
			if len(env) == 0 {
				env = nil
			}
			t.Env = env
		}
		t.Enabled = clonePtr(t.Enabled)
		t.Ephemeral = clonePtr(t.Ephemeral)
		out.Targets[i] = t
	}
	if c.Targets == nil {
		out.Targets = nil
	}
	return &out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// PollIntervalOf is t's configured poll interval: its own, else webhook.poll_interval while
// webhooks are configured (deliveries wake a target at once; the poll only reconciles missed
// ones), else the daemon's. 0 when none is set (a Config built by hand).
func (c *Config) PollIntervalOf(t Target) time.Duration {
	poll := t.PollInterval.D()
	if poll <= 0 && c.Webhook != nil {
		poll = c.Webhook.PollInterval.D()
	}
	if poll <= 0 {
		poll = c.Daemon.PollInterval.D()
	}
	return poll
}

// IdlePollIntervalOf is how often t reads a repository whose last reads all answered 304: its own
// idle_poll_interval, else the daemon's, else DefaultIdlePollFactor x its poll interval (poll);
// never more often than poll.
func (c *Config) IdlePollIntervalOf(t Target, poll time.Duration) time.Duration {
	idle := t.IdlePollInterval.D()
	if idle <= 0 {
		idle = c.Daemon.IdlePollInterval.D()
	}
	if idle <= 0 {
		idle = DefaultIdlePollFactor * poll
	}
	return max(idle, poll)
}
