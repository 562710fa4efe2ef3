package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
)

func TestPlanJobs(t *testing.T) {
	targets := []demoTarget{{Repo: "o/web", Labels: []string{"self-hosted", "demo"}}, {Repo: "o/api", Labels: []string{"self-hosted"}}}
	plan := planJobs(targets, 5, 8*time.Second, 2*time.Second, 5*time.Second, rand.New(rand.NewPCG(1, 0)))
	if len(plan) != 5 {
		t.Fatalf("planned %d jobs, want 5", len(plan))
	}
	wantAt := []time.Duration{0, 2 * time.Second, 4 * time.Second, 6 * time.Second, 8 * time.Second}
	for i, j := range plan {
		if j.At != wantAt[i] {
			t.Errorf("job %d queued at %s, want %s (evenly over the duration)", i, j.At, wantAt[i])
		}
		if want := targets[i%2]; j.Repo != want.Repo || !slices.Equal(j.Labels, want.Labels) {
			t.Errorf("job %d on %s %v, want %s %v (alternating targets)", i, j.Repo, j.Labels, want.Repo, want.Labels)
		}
		if j.Duration < 2*time.Second || j.Duration > 5*time.Second {
			t.Errorf("job %d runs %s, outside [2s, 5s]", i, j.Duration)
		}
	}
	if one := planJobs(targets, 1, time.Minute, time.Second, time.Second, rand.New(rand.NewPCG(1, 0))); one[0].At != 0 || one[0].Duration != time.Second {
		t.Errorf("a single job is queued at once with the fixed run time, got %+v", one[0])
	}
}

func TestDemoConfigPointsTheDaemonAtTheSimulator(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("ghp_x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("..", "..", "examples", "demo.toml")
	dst := filepath.Join(dir, "demo.toml")
	cfg, err := demoConfig(src, dst, "http://127.0.0.1:4321", filepath.Join(dir, "state"), token)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GitHub.APIURL != "http://127.0.0.1:4321" || cfg.GitHub.TokenFile != token || cfg.Daemon.StateDir != filepath.Join(dir, "state") {
		t.Errorf("rewritten config: api_url %q token_file %q state_dir %q", cfg.GitHub.APIURL, cfg.GitHub.TokenFile, cfg.Daemon.StateDir)
	}
	fi, err := os.Stat(dst)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the copy must be 0600: %v %v", fi.Mode(), err)
	}
	// The copy keeps everything else of the source: the targets the demo queues jobs for.
	var doc map[string]any
	data, _ := os.ReadFile(src)
	if err := toml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if n := len(doc["target"].([]any)); len(cfg.Targets) != n {
		t.Errorf("copy has %d targets, source %d", len(cfg.Targets), n)
	}
	targets, err := demoTargets(cfg)
	if err != nil || len(targets) == 0 {
		t.Fatalf("demo targets: %v %v", targets, err)
	}
	sets := 0
	for _, tg := range targets {
		switch {
		case !strings.Contains(tg.Repo, "/"):
			t.Errorf("target %+v: want owner/name", tg)
		case tg.Labels[0] == "demo-set":
			sets++ // the scale-set target: runs-on is the set's name alone
			if len(tg.Labels) != 1 {
				t.Errorf("scale-set target %+v: want runs-on = [demo-set]", tg)
			}
		case tg.Labels[0] != "self-hosted":
			t.Errorf("target %+v: want runs-on starting with self-hosted", tg)
		}
	}
	if sets != 1 {
		t.Errorf("the demo shows %d scale-set targets, want 1 beside the polled ones: %+v", sets, targets)
	}
}

func TestDemoConfigErrors(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("ghp_x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, body, want string
	}{
		{"not TOML", "[daemon\n", "demo config"},
		{"rejected by the daemon's loader", "[daemon]\nmax_runners = 0\n[[target]]\nname = \"a\"\nrepository = \"o/r\"\n", "not valid"},
		{"no repository target", "[[target]]\nname = \"a\"\norganization = \"o\"\n", "no enabled autoscale target with a repository"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".toml")
			if err := os.WriteFile(src, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := demoConfig(src, filepath.Join(dir, "out.toml"), "http://127.0.0.1:1", filepath.Join(dir, "state"), token)
			if err == nil {
				_, err = demoTargets(cfg)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, err := demoConfig(filepath.Join(dir, "missing.toml"), filepath.Join(dir, "o.toml"), "", "", ""); err == nil {
		t.Error("a missing demo config must fail")
	}
}
