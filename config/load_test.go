package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/redact"
)

func TestDefaults(t *testing.T) {
	cfg, err := loadIn(t, "c.toml", target(""))
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Daemon
	if d.StateDir != DefaultStateDir || d.LogLevel != "info" || d.LogFormat != "auto" || d.MaxRunners != DefaultMaxRunners ||
		d.PollInterval.D() != 30*time.Second || d.ShutdownDrainTimeout.D() != 60*time.Second || d.ReloadSettle.D() != time.Second || d.MetricsListen != "" || d.StatusListen != "" {
		t.Errorf("daemon defaults: %+v", d)
	}
	if cfg.GitHub.APIURL != DefaultAPIURL {
		t.Errorf("api_url default %q", cfg.GitHub.APIURL)
	}
	tg := cfg.Targets[0]
	if tg.MaxRunners != 1 || tg.MinIdle != 0 || tg.IdleTimeout.D() != 5*time.Minute || tg.Mode != "autoscale" ||
		tg.RunnerVersion != "latest" || !tg.IsEnabled() || tg.PollInterval != 0 {
		t.Errorf("target defaults: %+v", tg)
	}
	cfg, err = loadIn(t, "c.toml", auth+"[webhook]\nlisten = \":8080\"\nsecret_file = \"secret\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Webhook.PollInterval.D() != 2*time.Minute {
		t.Errorf("webhook.poll_interval default = %s, want 2m (the reconcile poll while webhooks drive demand)", cfg.Webhook.PollInterval)
	}
	if cfg.Webhook.Path != DefaultWebhookPath || cfg.Webhook.SecretFile != filepath.Join(filepath.Dir(cfg.Source), "secret") {
		t.Errorf("webhook: %+v (secret_file must be resolved against the config's directory)", cfg.Webhook)
	}
}

func TestEnvOverrides(t *testing.T) {
	env := []string{
		"RUNNER_MANAGER_STATE_DIR=/srv/rm", "RUNNER_MANAGER_LOG_LEVEL=debug", "RUNNER_MANAGER_LOG_FORMAT=json",
		"RUNNER_MANAGER_MAX_RUNNERS=12", "RUNNER_MANAGER_POLL_INTERVAL=5s", "RUNNER_MANAGER_SHUTDOWN_DRAIN_TIMEOUT=2m", "RUNNER_MANAGER_RELOAD_SETTLE=300ms",
		"RUNNER_MANAGER_METRICS_LISTEN=:9464", "RUNNER_MANAGER_STATUS_LISTEN=unix", "OTHER=1",
		"RUNNER_MANAGER_MEMORY_MAX=2GiB", "RUNNER_MANAGER_CPUS=1.5", "RUNNER_MANAGER_PIDS_MAX=512", "RUNNER_MANAGER_MIN_FREE_DISK=5GB",
	}
	cfg, err := loadIn(t, "c.toml", auth+"[daemon]\nmax_runners = 2\nlog_level = \"warn\"\n", env...)
	if err != nil {
		t.Fatal(err)
	}
	want := Daemon{StateDir: "/srv/rm", LogLevel: "debug", LogFormat: "json", MaxRunners: 12,
		PollInterval: Duration(5 * time.Second), ShutdownDrainTimeout: Duration(2 * time.Minute), ReloadSettle: Duration(300 * time.Millisecond), MaxJobDuration: Duration(120 * time.Hour), MetricsListen: ":9464", StatusListen: "unix", RunnerUserPrefix: DefaultRunnerUserPrefix,
		MemoryMax: 2 << 30, CPUs: 1.5, PidsMax: 512, MinFreeDisk: 5e9, Executor: ExecutorHost, DockerHost: DefaultDockerHost}
	if cfg.Daemon != want {
		t.Errorf("got %+v\nwant %+v", cfg.Daemon, want)
	}
	for _, tc := range []struct{ env, want string }{
		{"RUNNER_MANAGER_MAX_RUNNERS=lots", `environment RUNNER_MANAGER_MAX_RUNNERS: daemon.max_runners must be a whole number (got "lots")`},
		{"RUNNER_MANAGER_POLL_INTERVAL=soon", `environment RUNNER_MANAGER_POLL_INTERVAL: daemon.poll_interval: "soon" is not a duration`},
		// A rule failing on an overridden value points at the variable, not at the file's line.
		{"RUNNER_MANAGER_MAX_RUNNERS=0", `environment RUNNER_MANAGER_MAX_RUNNERS: daemon.max_runners must be at least 1 (got 0)`},
		{"RUNNER_MANAGER_MAX_RUNNER=3", `environment RUNNER_MANAGER_MAX_RUNNER: warning: not a runner-manager setting`},
		{"RUNNER_MANAGER_MEMORY_MAX=lots", `environment RUNNER_MANAGER_MEMORY_MAX: daemon.memory_max: "lots" is not a size`},
		{"RUNNER_MANAGER_CPUS=two", `environment RUNNER_MANAGER_CPUS: daemon.cpus must be a number such as 1.5 (got "two")`},
		{"RUNNER_MANAGER_MIN_FREE_DISK=1PiB", `environment RUNNER_MANAGER_MIN_FREE_DISK: daemon.min_free_disk: "1PiB" is not a size`},
	} {
		got := problemsOf(loadIn(t, "c.toml", auth+"[daemon]\nmax_runners = 2\n", tc.env))
		if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
			t.Errorf("%s: got %q, want %q", tc.env, got, tc.want)
		}
	}
	// The crash tests' switch is no setting and no mistake either.
	if got := problemsOf(loadIn(t, "c.toml", auth+"[daemon]\nmax_runners = 2\n", "RUNNER_MANAGER_TEST_CRASH_AT=after-jit")); len(got) != 0 {
		t.Errorf("RUNNER_MANAGER_TEST_CRASH_AT: got %q, want no problem", got)
	}
}

// TestExamplesEquivalent proves examples/config.toml and examples/config.yaml say the same thing.
// They are read as installed, chmod 600 (git keeps them 0644: readable env values would warn).
func TestExamplesEquivalent(t *testing.T) {
	none := Options{Environ: func() []string { return nil }}
	installed := func(name string) string {
		data, err := os.ReadFile("../examples/" + name)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, err := LoadWith(installed("config.toml"), none)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadWith(installed("config.yaml"), none)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Warnings)+len(b.Warnings) != 0 {
		t.Errorf("examples have warnings: %v %v", a.Warnings, b.Warnings)
	}
	a.Source, b.Source = "", ""
	if !reflect.DeepEqual(a, b) {
		t.Errorf("examples differ:\ntoml %+v\nyaml %+v", a, b)
	}
	if len(a.Targets) != 4 || len(a.EnabledTargets()) != 2 || len(a.Accounts) != 1 {
		t.Errorf("example targets: %d, enabled %d", len(a.Targets), len(a.EnabledTargets()))
	}
}

func TestYAMLPositionsAndAllProblems(t *testing.T) {
	body := "github:\n  device_flow:\n    client_id: x\ntarget:\n  - name: a\n    repository: o/a\n    max_runners: 0\n  - name: b\n    repository: o/b\n    labels: [ok, \"x,y\"]\n    bogus: 1\n"
	got := problemsOf(loadIn(t, "c.yml", body))
	want := []string{
		`7:5: target "a": max_runners must be at least 1 (got 0)`,
		`10:18: target "b": label "x,y" must not contain commas, spaces or control characters`,
		`11:5: target "b": unknown key "bogus"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestTOMLNestedPositions(t *testing.T) {
	body := auth + "[[target]]\nname = \"a\"\nrepository = \"o/a\"\n[target.env]\nok = \"1\"\n\n[[target]]\nname = \"b\"\nrepository = \"o/b\"\nmax_runners = 0\n"
	got := problemsOf(loadIn(t, "c.toml", body))
	if want := []string{`12:1: target "b": max_runners must be at least 1 (got 0)`}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	inline := "target = [\n  { name = \"a\", repository = \"o/a\" },\n  { name = \"b\", repository = \"o/b\", mode = \"x\" },\n]\n" + auth
	got = problemsOf(loadIn(t, "c.toml", inline))
	if want := []string{`3:37: target "b": mode must be one of autoscale, monitor (got "x")`}; !reflect.DeepEqual(got, want) {
		t.Errorf("inline: got %q, want %q", got, want)
	}
}

func TestSyntaxErrorsArePositioned(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"c.toml", "[daemon]\nmax_runners = = 1\n", "2:15: TOML syntax:"},
		{"c.toml", "a = 1\na = 2\n", "2:1: TOML syntax:"},
		{"c.yaml", "daemon:\n  a: 1\n b: 2\n", "3:1: YAML syntax: did not find expected key"},
		{"c.yaml", "daemon:\n  max_runners: 1\ntarget:\n  - name: a\n    labels: [x\n    max_runners: 2\n", "5:1: YAML syntax: did not find expected ',' or ']'"},
		{"c.yaml", "daemon:\n  state_dir: \"/x\n", "2:1: YAML syntax: found unexpected end of stream"},
		{"c.yaml", "- 1\n", "1:1: YAML: the document must be a mapping"},
	} {
		got := problemsOf(loadIn(t, tc.name, tc.body))
		if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
			t.Errorf("%q: got %q, want %q", tc.body, got, tc.want)
		}
	}
}

func TestLoadReadErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "none.toml"))
	var ce *Error
	if !errors.Is(err, fs.ErrNotExist) || errors.As(err, &ce) {
		t.Errorf("missing file: %v; want a not-exist error that is not a *config.Error", err)
	}
	if _, err := LoadBytes("c.ini", nil, Options{}); err == nil || !strings.Contains(err.Error(), `unsupported extension ".ini"`) {
		t.Errorf("extension: %v", err)
	}
	if _, err := LoadBytes("c", []byte(auth), Options{Format: "toml", Environ: func() []string { return nil }}); err != nil {
		t.Errorf("forced format: %v", err)
	}
}

func TestConfigMethods(t *testing.T) {
	cfg, err := loadIn(t, "c.toml", auth+"[[target]]\nname = \"a\"\nrepository = \"o/a\"\nenv = { TOKEN = \"s3cret\" }\n[[target]]\nname = \"b\"\norganization = \"o\"\nenabled = false\n")
	if err != nil {
		t.Fatal(err)
	}
	if en := cfg.EnabledTargets(); len(en) != 1 || en[0].Name != "a" {
		t.Errorf("EnabledTargets: %+v", en)
	}
	if b, ok := cfg.Target("b"); !ok || b.Identity() != "org:o" || b.IsEnabled() {
		t.Errorf("Target(b): %+v %v", b, ok)
	}
	if _, ok := cfg.Target("zzz"); ok {
		t.Error("Target(zzz) found")
	}
	if a, ok := cfg.Target("a"); !ok || a.Repository != "o/a" {
		t.Errorf("Target(a): %+v %v", a, ok)
	}
	byHand := &Config{Targets: slices.Clone(cfg.Targets)} // no index: Target scans
	if b, ok := byHand.Target("b"); !ok || b.Identity() != "org:o" {
		t.Errorf("Target(b) of a Config built by hand: %+v %v", b, ok)
	}
	if _, ok := byHand.Target("zzz"); ok {
		t.Error("Target(zzz) found in a Config built by hand")
	}
	r := cfg.Redacted()
	if r.Targets[0].Env["TOKEN"] != RedactedValue || cfg.Targets[0].Env["TOKEN"] != "s3cret" {
		t.Errorf("Redacted must redact a copy: copy %v, original %v", r.Targets[0].Env, cfg.Targets[0].Env)
	}
	*r.Targets[1].Enabled = true
	if cfg.Targets[1].IsEnabled() {
		t.Error("Redacted shares pointers with the original")
	}
}

// TestRedactedHidesURLUserinfo: a password or token embedded in api_url is never printed by
// `config print` (Redacted) nor echoed by a validation message.
func TestRedactedHidesURLUserinfo(t *testing.T) {
	cfg, err := loadIn(t, "c.toml", "[github]\napi_url = \"https://ops:hunter2@ghe.example.com/api/v3\"\n"+auth)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Redacted().GitHub.APIURL; got != "https://"+RedactedValue+"@ghe.example.com/api/v3" {
		t.Errorf("Redacted api_url = %q", got)
	}
	_, err = loadIn(t, "c.toml", "[github]\napi_url = \"ftp://x-access-token@ghe.example.com\"\n"+auth)
	if err == nil || strings.Contains(err.Error(), "x-access-token") {
		t.Errorf("the validation message echoes the userinfo: %v", err)
	}
	for in, want := range map[string]string{
		"https://a:b@h/p":     "https://" + RedactedValue + "@h/p",
		"https://tok@h":       "https://" + RedactedValue + "@h",
		"https://h/p@q":       "https://h/p@q",
		"https://h:8443/api":  "https://h:8443/api",
		"see https://u:p@h/x": "see https://" + RedactedValue + "@h/x",
	} {
		if got := redact.URL(in); got != want {
			t.Errorf("redact.URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestYAMLNullsAndWrongShapes(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"daemon:\ngithub:\n  device_flow: {client_id: x}\n", ""}, // an empty section is an absent one
		{"github: {device_flow: {client_id: x}}\ntarget: [~]\n", "2:10: target #1: the entry must be a table (got nothing)"},
		{"target: {name: a}\n", "1:1: target must be a list of tables"},
		{"daemon: [1]\n", "1:1: daemon must be a table (got a list)"},
	} {
		got := problemsOf(loadIn(t, "c.yaml", tc.body))
		if tc.want == "" && len(got) == 0 {
			continue
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
			t.Errorf("%q: got %q, want %q", tc.body, got, tc.want)
		}
	}
}

func TestRejectedFileStillNamesItsStateDir(t *testing.T) {
	data := []byte("[daemon]\nstate_dir = \"/srv/rm\"\nmax_runners = 0\n")
	_, err := LoadBytes("c.toml", data, Options{Environ: func() []string { return nil }})
	var cerr *Error
	if !errors.As(err, &cerr) {
		t.Fatalf("LoadBytes = %v, want *Error", err)
	}
	if cerr.StateDir != "/srv/rm" {
		t.Fatalf("Error.StateDir = %q, want /srv/rm (status finds the running daemon through it)", cerr.StateDir)
	}
}

// A target's max_job_duration is its own, else the [daemon] one, else 120h (GitHub's limit on a
// self-hosted job); 0s turns the bound off for that target.
func TestMaxJobDurationDefault(t *testing.T) {
	for _, tc := range []struct {
		name, daemon, target string
		want                 time.Duration
	}{
		{"neither", "", "", 120 * time.Hour},
		{"daemon's", "[daemon]\nmax_job_duration = \"6h\"\n", "", 6 * time.Hour},
		{"target's wins", "[daemon]\nmax_job_duration = \"6h\"\n", "max_job_duration = \"1h\"\n", time.Hour},
		{"daemon off", "[daemon]\nmax_job_duration = \"0s\"\n", "", 0},
		{"target off", "", "max_job_duration = \"0s\"\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadIn(t, "c.toml", tc.daemon+target(tc.target))
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Targets[0].MaxJobDuration.D(); got != tc.want {
				t.Errorf("target max_job_duration = %s, want %s", got, tc.want)
			}
		})
	}
}
