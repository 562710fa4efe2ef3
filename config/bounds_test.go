package config

import (
	"slices"
	"strings"
	"testing"
)

// TestBounds has one row per bounded number: in range at its bound, rejected past it with a
// positioned "too large", in TOML, YAML and the environment.
func TestBounds(t *testing.T) {
	for _, tc := range []struct {
		name, file, body string
		env              []string
		want             string // "" = valid without warnings
	}{
		{"host max_runners at bound", "c.toml", auth + "[daemon]\nmax_runners = 1000\n", nil, ""},
		{"host max_runners past bound", "c.toml", auth + "[daemon]\nmax_runners = 1001\n", nil, `4:1: daemon.max_runners is too large: at most 1000 (got 1001)`},
		{"host max_runners int64 max", "c.toml", auth + "[daemon]\nmax_runners = 9223372036854775807\n", nil, `4:1: daemon.max_runners is too large: at most 1000 (got 9223372036854775807)`},
		{"host max_runners overflow TOML", "c.toml", auth + "[daemon]\nmax_runners = 9223372036854775808\n", nil, `4:15: TOML syntax: toml: decimal number is too large`},
		{"host max_runners overflow YAML", "c.yaml", "daemon:\n  max_runners: 9223372036854775808\n", nil, `2:3: daemon.max_runners is too large for a whole number (got integer 9223372036854775808)`},
		{"host max_runners overflow YAML float", "c.yaml", "daemon:\n  max_runners: 99999999999999999999\n", nil, `2:3: daemon.max_runners is too large for a whole number`},
		{"host max_runners env", "c.toml", auth, []string{"RUNNER_MANAGER_MAX_RUNNERS=5000"}, `environment RUNNER_MANAGER_MAX_RUNNERS: daemon.max_runners is too large: at most 1000 (got 5000)`},
		{"target max_runners at bound", "c.toml", target("max_runners = 1000\n"), nil, `warning: enabled targets allow 1000 runners together`},
		{"target max_runners past bound", "c.toml", target("max_runners = 1001\n"), nil, `6:1: target "api": max_runners is too large: at most 1000 (got 1001)`},
		{"app_id overflow YAML", "c.yaml", "github:\n  app_id: 18446744073709551615\n  private_key_file: key.pem\n", nil, `2:3: github.app_id is too large for a whole number`},
		{"poll_interval at bound", "c.toml", auth + "[daemon]\npoll_interval = \"720h\"\n", nil, ""},
		{"poll_interval past bound", "c.toml", auth + "[daemon]\npoll_interval = \"721h\"\n", nil, `4:1: daemon.poll_interval is too large: at most 720h (30 days) (got 721h0m0s)`},
		{"poll_interval overflow", "c.toml", auth + "[daemon]\npoll_interval = \"2562048h\"\n", nil, `4:1: daemon.poll_interval is too large: at most 720h (30 days) (got "2562048h")`},
		{"poll_interval overflow env", "c.toml", auth, []string{"RUNNER_MANAGER_POLL_INTERVAL=2562048h"}, `environment RUNNER_MANAGER_POLL_INTERVAL: daemon.poll_interval is too large: at most 720h (30 days) (got "2562048h")`},
		{"poll_interval malformed is not too large", "c.toml", auth + "[daemon]\npoll_interval = \"2562048 hours\"\n", nil, `is not a duration`},
		{"shutdown_drain_timeout at bound", "c.toml", auth + "[daemon]\nshutdown_drain_timeout = \"1h\"\n", nil, ""},
		{"shutdown_drain_timeout past bound", "c.toml", auth + "[daemon]\nshutdown_drain_timeout = \"61m\"\n", nil, `4:1: daemon.shutdown_drain_timeout is too large: at most 1h (got 1h1m0s)`},
		{"shutdown_drain_timeout overflow", "c.yaml", "daemon:\n  shutdown_drain_timeout: 9999999999h\n", nil, `2:3: daemon.shutdown_drain_timeout is too large: at most 1h (got "9999999999h")`},
		{"max_job_duration at bound", "c.toml", target("max_job_duration = \"720h\"\n"), nil, ""},
		{"max_job_duration past bound", "c.toml", target("max_job_duration = \"721h\"\n"), nil, `6:1: target "api": max_job_duration is too large: at most 720h (30 days) (got 721h0m0s)`},
		{"max_job_duration negative", "c.toml", auth + "[daemon]\nmax_job_duration = \"-1h\"\n", nil, `4:1: daemon.max_job_duration must not be negative (got -1h0m0s); 0s turns the bound off`},
		{"daemon max_job_duration past bound", "c.toml", auth + "[daemon]\nmax_job_duration = \"800h\"\n", nil, `4:1: daemon.max_job_duration is too large: at most 720h (30 days) (got 800h0m0s)`},
		{"reload_settle at bound", "c.toml", auth + "[daemon]\nreload_settle = \"1m\"\n", nil, ""},
		{"reload_settle past bound", "c.toml", auth + "[daemon]\nreload_settle = \"61s\"\n", nil, `4:1: daemon.reload_settle is too large: at most 1m (got 1m1s)`},
		{"reload_settle zero", "c.toml", auth + "[daemon]\nreload_settle = \"0s\"\n", nil, `4:1: daemon.reload_settle must be at least 100ms (got 0s)`},
		{"webhook poll_interval past bound", "c.toml", auth + "[webhook]\nlisten = \":8080\"\nsecret_file = \"secret\"\npoll_interval = \"800h\"\n", nil, `6:1: webhook.poll_interval is too large: at most 720h (30 days) (got 800h0m0s)`},
		{"fleet lease_ttl past bound", "c.toml", auth + fleet("lease_ttl = \"721h\"\n"), nil, `fleet.lease_ttl is too large: at most 720h (30 days) (got 721h0m0s)`},
		{"idle_timeout past bound", "c.toml", target("idle_timeout = \"31d\"\n"), nil, `idle_timeout: "31d" is not a duration`},
		{"idle_timeout past bound hours", "c.toml", target("idle_timeout = \"744h\"\n"), nil, `6:1: target "api": idle_timeout is too large: at most 720h (30 days) (got 744h0m0s)`},
		{"points_per_minute at GitHub's limit", "c.toml", "[github]\npoints_per_minute = 900\nmax_concurrent_requests = 100\n" + auth, nil, ""},
		{"points_per_minute past GitHub's limit", "c.toml", "[github]\npoints_per_minute = 901\n" + auth, nil, `2:1: github.points_per_minute is too large: at most 900, GitHub's own limit (got 901)`},
		{"max_concurrent_requests past GitHub's limit", "c.toml", "[github]\nmax_concurrent_requests = 101\n" + auth, nil, `2:1: github.max_concurrent_requests is too large: at most 100, GitHub's own limit (got 101)`},
		{"points_per_minute negative", "c.yaml", "github:\n  points_per_minute: -1\n  device_flow:\n    client_id: x\n", nil, `2:3: github.points_per_minute must be positive, or absent for the default (got -1)`},
		{"target poll_interval past bound", "c.yaml", "github:\n  device_flow:\n    client_id: x\ntarget:\n  - name: api\n    repository: acme/api\n    poll_interval: 9000h\n", nil, `7:5: target "api": poll_interval is too large: at most 720h (30 days) (got 9000h0m0s)`},
		{"memory_max at bound", "c.toml", auth + "[daemon]\nmemory_max = \"64TiB\"\n", nil, ""},
		{"memory_max past bound", "c.toml", auth + "[daemon]\nmemory_max = \"65TiB\"\n", nil, `4:1: daemon.memory_max is too large: at most 64TiB (got 65TiB)`},
		{"memory_max below least", "c.toml", target("memory_max = \"1MiB\"\n"), nil, `6:1: target "api": memory_max must be at least 16MiB: the runner itself needs that much (got 1MiB)`},
		{"memory_max bytes", "c.yaml", "github:\n  device_flow:\n    client_id: x\ndaemon:\n  memory_max: 536870912\n", nil, ""},
		{"memory_max negative", "c.yaml", "github:\n  device_flow:\n    client_id: x\ndaemon:\n  memory_max: -1\n", nil, `5:3: daemon.memory_max must not be negative (got -1)`},
		{"memory_max overflow", "c.toml", auth + "[daemon]\nmemory_max = \"9999999999TiB\"\n", nil, `4:1: daemon.memory_max is too large: at most 64TiB (got "9999999999TiB")`},
		{"memory_max overflow YAML bytes", "c.yaml", "daemon:\n  memory_max: 18446744073709551615\n", nil, `2:3: daemon.memory_max is too large: at most 64TiB (got 18446744073709551615)`},
		{"memory_max malformed", "c.toml", auth + "[daemon]\nmemory_max = \"lots\"\n", nil, `4:1: daemon.memory_max: "lots" is not a size`},
		{"memory_max wrong kind", "c.toml", auth + "[daemon]\nmemory_max = true\n", nil, `4:1: daemon.memory_max must be a size such as "512MiB" or a whole number of bytes (got boolean true)`},
		{"min_free_disk past bound", "c.toml", target("min_free_disk = \"80TB\"\n"), nil, `6:1: target "api": min_free_disk is too large: at most 64TiB (got 80TB)`},
		{"min_free_disk zero", "c.toml", auth + "[daemon]\nmin_free_disk = 0\n", nil, ""},
		{"cpus at bound", "c.toml", target("cpus = 1024\n"), nil, ""},
		{"cpus past bound", "c.toml", auth + "[daemon]\ncpus = 1024.5\n", nil, `4:1: daemon.cpus is too large: at most 1024 (got 1024.5)`},
		{"cpus below least", "c.toml", target("cpus = 0.001\n"), nil, `6:1: target "api": cpus must be at least 0.01, the smallest CPU quota the kernel enforces (got 0.001)`},
		{"cpus negative", "c.toml", auth + "[daemon]\ncpus = -1.5\n", nil, `4:1: daemon.cpus must not be negative (got -1.5)`},
		{"cpus wrong kind", "c.toml", auth + "[daemon]\ncpus = \"2\"\n", nil, `4:1: daemon.cpus must be a number such as 1.5 (got string "2")`},
		{"pids_max at bound", "c.toml", auth + "[daemon]\npids_max = 4194304\n", nil, ""},
		{"pids_max past bound", "c.toml", auth + "[daemon]\npids_max = 4194305\n", nil, `4:1: daemon.pids_max is too large: at most 4194304, the kernel's PID_MAX_LIMIT (got 4194305)`},
		{"pids_max below least", "c.toml", target("pids_max = 10\n"), nil, `6:1: target "api": pids_max must be at least 64: it counts threads`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(loadIn(t, tc.file, tc.body, tc.env...))
			if !strings.Contains(tc.want, "warning:") {
				// An over-committed host warns beside a too-large target; only the errors count here.
				got = slices.DeleteFunc(got, func(p string) bool { return strings.Contains(p, "warning:") })
			}
			wantOne(t, got, tc.want)
		})
	}
}
