package config

// RedactedValue replaces every secret in a Redacted copy.
const RedactedValue = "<redacted>"

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
	for _, t := range c.Targets {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// Redacted returns a deep copy safe to print: target env values become RedactedValue (they may hold
// secrets; their names stay visible). Credential paths are kept: a path is not a secret, and the
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
	out.Warnings = append([]Problem(nil), c.Warnings...)
	out.Targets = make([]Target, len(c.Targets))
	for i, t := range c.Targets {
		t.Labels = append([]string(nil), t.Labels...)
		if t.Env != nil {
			env := make(map[string]string, len(t.Env))
			for k := range t.Env {
				env[k] = RedactedValue
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
