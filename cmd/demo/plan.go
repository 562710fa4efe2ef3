package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/runner-manager/runner-manager/config"
)

// demoConfig writes a copy of the demo config (src) to dst with the simulator's URL, the token
// file and a private state directory, so runs never collide, and loads it back with the daemon's
// own loader: a config the daemon would reject fails here first, with the same message.
func demoConfig(src, dst, apiURL, stateDir, tokenFile string) (*config.Config, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return nil, fmt.Errorf("read the demo config: %w", err)
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("demo config %s: %w", src, err)
	}
	table := func(key string) map[string]any {
		t, ok := doc[key].(map[string]any)
		if !ok {
			t = map[string]any{}
			doc[key] = t
		}
		return t
	}
	table("daemon")["state_dir"] = stateDir
	// The demo shows scaling, not isolation: as root it would create per-slot users.
	table("daemon")["runner_user"] = config.RunnerUserDaemon
	gh := table("github")
	for _, k := range []string{"app_id", "app_client_id", "installation_id", "private_key_file", "device_flow"} {
		delete(gh, k) // the demo authenticates with the simulator's token only
	}
	gh["api_url"], gh["token_file"] = apiURL, tokenFile
	out, err := toml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("write the demo config: %w", err)
	}
	header := fmt.Sprintf("# Written by cmd/demo from %s for one run against the simulator.\n", filepath.Base(src))
	if err := os.WriteFile(dst, append([]byte(header), out...), 0o600); err != nil {
		return nil, fmt.Errorf("write the demo config: %w", err)
	}
	cfg, err := config.Load(dst)
	if err != nil {
		return nil, fmt.Errorf("the demo config (from %s) is not valid: %w", src, err)
	}
	return cfg, nil
}

// demoTarget is a repository the demo queues jobs on, with the labels its runners carry.
type demoTarget struct {
	Repo   string
	Labels []string
}

// demoTargets lists the enabled, autoscaled repository targets: the only ones a job queued on one
// repository can be matched to without guessing the organisation's repositories.
func demoTargets(cfg *config.Config) ([]demoTarget, error) {
	var out []demoTarget
	for _, t := range cfg.Targets {
		if t.Repository == "" || !t.IsEnabled() || t.Mode == "monitor" {
			continue
		}
		if t.ScaleSet != "" {
			// GitHub routes a job to a scale set when its runs-on is the set's name alone.
			out = append(out, demoTarget{Repo: t.Repository, Labels: []string{t.ScaleSet}})
			continue
		}
		// runs-on must be a subset of the runner's labels; self-hosted is on every such runner.
		labels := []string{"self-hosted"}
		for _, l := range t.Labels {
			if !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
		out = append(out, demoTarget{Repo: t.Repository, Labels: labels})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the demo config has no enabled autoscale target with a repository; add one")
	}
	return out, nil
}

// plannedJob is one job of the stream: when to queue it (after the start), where, and how long it runs.
type plannedJob struct {
	At       time.Duration
	Repo     string
	Labels   []string
	Name     string
	Duration time.Duration
}

// planJobs spreads n jobs evenly over `over`, alternating between the targets, each running for a
// random duration in [minRun, maxRun].
func planJobs(targets []demoTarget, n int, over, minRun, maxRun time.Duration, rng *rand.Rand) []plannedJob {
	out := make([]plannedJob, 0, n)
	for i := range n {
		t := targets[i%len(targets)]
		run := minRun
		if maxRun > minRun {
			run += time.Duration(rng.Int64N(int64(maxRun - minRun + 1)))
		}
		run = run.Round(100 * time.Millisecond)
		var at time.Duration
		if n > 1 {
			at = over * time.Duration(i) / time.Duration(n-1)
		}
		out = append(out, plannedJob{At: at, Repo: t.Repo, Labels: t.Labels, Name: fmt.Sprintf("build-%d", i+1), Duration: run})
	}
	return out
}
