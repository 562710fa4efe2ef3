package bench

import (
	"testing"
	"time"
)

func TestSetupRendersAValidConfigWithOneEditedTarget(t *testing.T) {
	dir := t.TempDir()
	s := Setup{Targets: 3, HostMax: 5, TargetMax: 2, PollInterval: 30 * time.Second, IdleTimeout: time.Minute, Edited: 2}
	s.Webhook.Listen, s.Webhook.Path = "127.0.0.1:9", "/hook"
	s.Webhook.SecretFile = dir + "/token" // any 0600 file will do for loading
	cfg := mustLoad(t, writeSetup(t, dir, s))
	if len(cfg.Targets) != 3 || cfg.Daemon.MaxRunners != 5 || cfg.Webhook == nil || cfg.Webhook.Path != "/hook" {
		t.Fatalf("loaded %d targets, host max %d, webhook %+v", len(cfg.Targets), cfg.Daemon.MaxRunners, cfg.Webhook)
	}
	for i, want := range []int{2, 3, 2} {
		tg := cfg.Targets[i]
		if tg.Name != TargetName(i+1) || tg.Repository != Repo(i+1) || tg.MaxRunners != want {
			t.Errorf("target %d = %s %s max %d, want %s %s max %d", i, tg.Name, tg.Repository, tg.MaxRunners, TargetName(i+1), Repo(i+1), want)
		}
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 20; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    int
		want time.Duration
	}{{50, 10 * time.Millisecond}, {95, 19 * time.Millisecond}, {100, 20 * time.Millisecond}, {0, time.Millisecond}} {
		if got := Percentile(d, c.p); got != c.want {
			t.Errorf("p%d = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile(d[:2], 95); got != 20*time.Millisecond {
		t.Errorf("p95 of two = %v, want the larger", got)
	}
	if Percentile(nil, 50) != 0 {
		t.Error("no samples must give 0")
	}
}

// TestSetupRendersAFleetHost: the [fleet] section and min_idle load the same from TOML and YAML.
func TestSetupRendersAFleetHost(t *testing.T) {
	s := Setup{Targets: 1, HostMax: 4, TargetMax: 4, PollInterval: 10 * time.Second, MinIdle: 1}
	s.Fleet.Endpoint, s.Fleet.Name, s.Fleet.Host, s.Fleet.LeaseTTL = "http://127.0.0.1:2379", "bench", "host-2", 3*time.Second
	for _, format := range []string{"toml", "yaml"} {
		cfg := mustLoad(t, writeSetupAs(t, t.TempDir(), s, format))
		f := cfg.Fleet
		if f == nil || f.Name != "bench" || f.HostName != "host-2" || f.LeaseTTL.D() != 3*time.Second || len(f.EtcdEndpoints) != 1 || cfg.Targets[0].MinIdle != 1 {
			t.Fatalf("%s: fleet %+v, min_idle %d", format, f, cfg.Targets[0].MinIdle)
		}
	}
}

// TestSetupRendersOrganizationTargets: organization targets follow the repository targets, the
// same in TOML and YAML.
func TestSetupRendersOrganizationTargets(t *testing.T) {
	s := Setup{Targets: 1, HostMax: 4, TargetMax: 3, PollInterval: 30 * time.Second, Orgs: []string{"acme", "big"}}
	for _, format := range []string{"toml", "yaml"} {
		cfg := mustLoad(t, writeSetupAs(t, t.TempDir(), s, format))
		if len(cfg.Targets) != 3 || cfg.Targets[0].Repository != Repo(1) {
			t.Fatalf("%s: targets %+v", format, cfg.Targets)
		}
		for i, org := range s.Orgs {
			tg := cfg.Targets[1+i]
			if tg.Name != OrgTargetName(org) || tg.Organization != org || tg.MaxRunners != 3 || len(tg.Labels) != 1 || tg.Labels[0] != "bench" {
				t.Errorf("%s: target %d = %+v", format, 1+i, tg)
			}
		}
	}
}

// TestSetupRendersContainerRunners: per-slot users and the container keys load the same from TOML
// and YAML, and validate (image and network set, runner_user not "daemon").
func TestSetupRendersContainerRunners(t *testing.T) {
	s := Setup{Targets: 1, HostMax: 4, TargetMax: 4, PollInterval: 10 * time.Second, SlotPrefix: "rmb1-r"}
	s.Container.Image, s.Container.Network, s.Container.DockerHost = "rm-bench/runner:1", "host", "unix:///tmp/rm-dockerd-x/docker.sock"
	for _, format := range []string{"toml", "yaml"} {
		cfg := mustLoad(t, writeSetupAs(t, t.TempDir(), s, format))
		d, tg := cfg.Daemon, cfg.Targets[0]
		if d.RunnerUser != "per-slot" || d.RunnerUserPrefix != "rmb1-r" || d.DockerHost != s.Container.DockerHost {
			t.Fatalf("%s: daemon %+v", format, d)
		}
		if tg.Executor != "container" || tg.Image != s.Container.Image || tg.Network != "host" || tg.ImagePull != "never" {
			t.Fatalf("%s: target %+v", format, tg)
		}
	}
}
