package engine

import (
	"reflect"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

func baseTarget(name string) config.Target {
	return config.Target{Name: name, Repository: "acme/" + name, Labels: []string{"self-hosted", "linux"},
		MaxRunners: 4, MinIdle: 0, IdleTimeout: config.Duration(5 * time.Minute), Mode: "autoscale", RunnerVersion: "latest"}
}

func cfgOf(ts ...config.Target) *config.Config {
	return &config.Config{Daemon: config.Daemon{MaxRunners: 8, PollInterval: config.Duration(30 * time.Second),
		ShutdownDrainTimeout: config.Duration(60 * time.Second)}, Targets: ts}
}

func with(t config.Target, f func(*config.Target)) config.Target { f(&t); return t }

func TestDiff(t *testing.T) {
	a, b := baseTarget("a"), baseTarget("b")
	off := false
	tests := []struct {
		name     string
		old, cur *config.Config
		want     Report
	}{
		{"first apply", nil, cfgOf(a), Report{Added: []string{"a"}}},
		{"no-op", cfgOf(a, b), cfgOf(a, b), Report{Unchanged: []string{"a", "b"}}},
		{"nil and empty labels equal", cfgOf(with(a, func(t *config.Target) { t.Labels = nil })), cfgOf(with(a, func(t *config.Target) { t.Labels = []string{} })), Report{Unchanged: []string{"a"}}},
		{"add", cfgOf(a), cfgOf(a, b), Report{Added: []string{"b"}, Unchanged: []string{"a"}}},
		{"remove", cfgOf(a, b), cfgOf(a), Report{Removed: []string{"b"}, Unchanged: []string{"a"}}},
		{"disable", cfgOf(a, b), cfgOf(a, with(b, func(t *config.Target) { t.Enabled = &off })), Report{Disabled: []string{"b"}, Unchanged: []string{"a"}}},
		{"re-enable", cfgOf(a, with(b, func(t *config.Target) { t.Enabled = &off })), cfgOf(a, b), Report{Added: []string{"b"}, Unchanged: []string{"a"}}},
		{"rename", cfgOf(a), cfgOf(with(a, func(t *config.Target) { t.Name = "a2" })), Report{Added: []string{"a2"}, Removed: []string{"a"}}},
		{"repository", cfgOf(a), cfgOf(with(a, func(t *config.Target) { t.Repository = "acme/other" })), Report{Restarted: []string{"a"}}},
		{"repo to org", cfgOf(a), cfgOf(with(a, func(t *config.Target) { t.Repository, t.Organization = "", "acme" })), Report{Restarted: []string{"a"}}},
		{"scale_set rename", cfgOf(with(a, func(t *config.Target) { t.ScaleSet = "linux" })),
			cfgOf(with(a, func(t *config.Target) { t.ScaleSet = "linux-x64" })), Report{Restarted: []string{"a"}}},
		{"scale_set added", cfgOf(a), cfgOf(with(a, func(t *config.Target) { t.ScaleSet = "linux" })), Report{Restarted: []string{"a"}}},
		{"daemon max_runners", cfgOf(a), func() *config.Config { c := cfgOf(a); c.Daemon.MaxRunners = 2; return c }(),
			Report{Unchanged: []string{"a"}, Daemon: []string{"max_runners"}}},
		{"github, webhook and fleet sections", cfgOf(a), func() *config.Config {
			c := cfgOf(a)
			c.GitHub.TokenFile = "/etc/rm/token"
			c.Webhook = &config.Webhook{Listen: ":8080"}
			c.Fleet = &config.Fleet{Name: "ci"}
			return c
		}(), Report{Unchanged: []string{"a"}, Sections: []string{"github", "webhook", "fleet"}}},
	}
	fields := []struct {
		key     string
		replace bool
		f       func(*config.Target)
	}{
		{"runner_group", true, func(t *config.Target) { t.RunnerGroup = "gpu" }},
		{"labels", true, func(t *config.Target) { t.Labels = []string{"self-hosted", "arm64"} }},
		{"max_runners", false, func(t *config.Target) { t.MaxRunners = 9 }},
		{"min_idle", false, func(t *config.Target) { t.MinIdle = 1 }},
		{"idle_timeout", false, func(t *config.Target) { t.IdleTimeout = config.Duration(time.Minute) }},
		{"poll_interval", false, func(t *config.Target) { t.PollInterval = config.Duration(time.Minute) }},
		{"mode", false, func(t *config.Target) { t.Mode = "monitor" }},
		{"runner_version", true, func(t *config.Target) { t.RunnerVersion = "2.320.0" }},
		{"work_dir", false, func(t *config.Target) { t.WorkDir = "/tmp/w" }},
		{"env", true, func(t *config.Target) { t.Env = map[string]string{"A": "1"} }},
	}
	for _, f := range fields {
		tests = append(tests, struct {
			name     string
			old, cur *config.Config
			want     Report
		}{"change " + f.key, cfgOf(a, b), cfgOf(with(a, f.f), b),
			Report{Changed: []TargetChange{{Name: "a", Fields: []string{f.key}, Replace: f.replace}}, Unchanged: []string{"b"}}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diff(tt.old, tt.cur)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("diff:\n got %+v\nwant %+v", got, tt.want)
			}
			if tt.name == "no-op" && !got.NoOp() {
				t.Fatal("identical configs must be a no-op")
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	a := baseTarget("a")
	same := with(a, func(t *config.Target) { t.Labels = []string{"linux", "self-hosted"}; t.MaxRunners = 1; t.MinIdle = 3 })
	if fingerprint(a) != fingerprint(same) {
		t.Fatal("label order and capacity must not change the launch policy")
	}
	for _, f := range []func(*config.Target){
		func(t *config.Target) { t.Labels = append(t.Labels, "x") },
		func(t *config.Target) { t.RunnerGroup = "g" },
		func(t *config.Target) { t.RunnerVersion = "2.1.0" },
		func(t *config.Target) { t.Env = map[string]string{"K": "v"} },
	} {
		if fingerprint(a) == fingerprint(with(a, f)) {
			t.Fatalf("launch policy change not detected: %+v", with(a, f))
		}
	}
	if got := policyIdentity(fingerprint(a)); got != "repo:acme/a" {
		t.Fatalf("identity in policy = %q", got)
	}
	if rt := targetForIdentity("a", "org:acme"); rt.Identity() != "org:acme" {
		t.Fatalf("targetForIdentity org = %q", rt.Identity())
	}
	if rt := targetForIdentity("a", "repo:acme/x"); rt.Identity() != "repo:acme/x" {
		t.Fatalf("targetForIdentity repo = %q", rt.Identity())
	}
	for _, id := range []string{"org:acme/scale_set:linux", "repo:acme/x/scale_set:gpu.large"} {
		if rt := targetForIdentity("a", id); rt.Identity() != id || rt.ScaleSet == "" {
			t.Fatalf("targetForIdentity(%q) = %q, scale set %q", id, rt.Identity(), rt.ScaleSet)
		}
	}
}
