package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/knadh/koanf/maps"
	ktoml "github.com/knadh/koanf/parsers/toml/v2"
	kyaml "github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/v2"
)

// Options adjusts LoadWith and LoadBytes; the zero value is what the daemon uses.
type Options struct {
	// Environ returns the environment as "KEY=value" strings, like os.Environ (the default).
	// Tests and fuzzing pass a fixed list so the host's RUNNER_MANAGER_* variables do not leak in.
	Environ func() []string
	// Format forces "toml" or "yaml"; empty picks it from the file name (.toml, .yaml, .yml).
	Format string
	// Offline skips the checks that need the host the config is meant for: the existence and modes
	// of the secret files (token, App key, webhook secret). `validate --offline` in a CI pipeline
	// sets it, where those files do not exist; the daemon never does.
	Offline bool
	// GOOS is the operating system the config is checked for ("linux", "windows", "darwin"); empty
	// is this host's (runtime.GOOS). Rules that depend on the system (executor = "container" needs
	// Linux) read it here, so a test on Linux can check them for another system.
	GOOS string
}

// EnvPrefix starts every environment override: RUNNER_MANAGER_MAX_RUNNERS sets daemon.max_runners.
const EnvPrefix = "RUNNER_MANAGER_"

// Defaults, documented in docs/configuration.md.
const (
	DefaultAPIURL       = "https://api.github.com"
	DefaultMaxRunners   = 4
	DefaultPollInterval = "30s"
	// DefaultIdlePollFactor: an absent idle_poll_interval is this many poll intervals.
	DefaultIdlePollFactor       = 4
	DefaultShutdownDrainTimeout = "60s"
	DefaultReloadSettle         = "1s"
	DefaultWebhookPath          = "/webhook"
	DefaultWebhookPollInterval  = "2m"
	DefaultTargetMaxRunners     = 1
	DefaultIdleTimeout          = "5m"
	DefaultStartupTimeout       = "5m"
	// DefaultMaxJobDuration is GitHub's own bound on a job of a self-hosted runner (5 days): a
	// runner busy longer runs nothing GitHub still waits for (docs/configuration.md).
	DefaultMaxJobDuration = "120h"
	// MinStartupTimeout is the shortest startup_timeout: a runner needs a few seconds to connect.
	MinStartupTimeout    = 5 * time.Second
	DefaultFleetLeaseTTL = "10s"
	// DefaultRunnerUserPrefix names the per-slot runner users: runner-manager-r0, -r1, ...
	DefaultRunnerUserPrefix = "runner-manager-r"
)

// daemon.runner_user values.
const (
	RunnerUserPerSlot = "per-slot"
	RunnerUserDaemon  = "daemon"
)

// daemonEnvKeys are the [daemon] scalars an environment variable may override, with their kinds.
var daemonEnvKeys = map[string]string{
	"state_dir": "string", "log_level": "string", "log_format": "string", "max_runners": "int",
	"poll_interval": "duration", "idle_poll_interval": "duration", "shutdown_drain_timeout": "duration", "reload_settle": "duration",
	"metrics_listen": "string", "status_listen": "string",
	"status_token_file": "string", "runner_user": "string", "runner_user_prefix": "string",
	"memory_max": "size", "min_free_disk": "size", "cpus": "float", "pids_max": "int",
	"executor": "string", "docker_host": "string",
}

// Load reads, parses and validates the config file at path with the process environment. It is the
// one code path of the daemon's start, its reloads and `runner-manager validate`.
//
// The result is either a valid *Config (whose Warnings may be non-empty) or an error: a *Error when
// the file was read but is invalid (every problem positioned), any other error when the file could
// not be read (missing, permissions) or its extension is not .toml/.yaml/.yml.
func Load(path string) (*Config, error) { return LoadWith(path, Options{}) }

// LoadWith is Load with Options.
func LoadWith(path string, opts Options) (*Config, error) {
	// One read feeds both koanf and the position index, so a file replaced between two reads can
	// never give positions from another version of it.
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read config file: %w", err)
	}
	return LoadBytes(path, data, opts)
}

// LoadBytes is LoadWith on data already in memory; name is used for messages, for the format when
// Options.Format is empty, and as the base of relative file paths in the config.
func LoadBytes(name string, data []byte, opts Options) (*Config, error) {
	format, err := formatOf(name, opts.Format)
	if err != nil {
		return nil, err
	}
	c := newChecker(name)
	c.offline = opts.Offline
	c.goos = cmp.Or(opts.GOOS, runtime.GOOS)
	raw, pos, ok := parse(c, format, data)
	if !ok {
		return nil, c.result()
	}
	if len(raw) == 0 {
		// An empty file is what a truncate-then-write leaves for a moment; applied, it would remove
		// every target and the credential. A file with sections but no [[target]] stays valid.
		c.add(SeverityError, "", "the file holds no settings (it is empty, or only whitespace and comments): "+
			"write the whole config, at least one section such as [github] (check it with `runner-manager validate`)")
		return nil, c.result()
	}
	c.pos = pos
	maps.IntfaceKeysToStrings(raw)
	c.checkShape(raw)
	applyListDefaults(raw)

	k := koanf.New(".")
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ
	}
	loadErr := k.Load(confmap.Provider(map[string]any{
		"daemon.state_dir": DefaultStateDir, "daemon.log_level": "info", "daemon.log_format": "auto",
		"daemon.max_runners": DefaultMaxRunners, "daemon.poll_interval": DefaultPollInterval,
		"daemon.shutdown_drain_timeout": DefaultShutdownDrainTimeout, "daemon.reload_settle": DefaultReloadSettle,
		"daemon.runner_user_prefix": DefaultRunnerUserPrefix, "daemon.min_free_disk": int64(DefaultMinFreeDisk), "daemon.max_job_duration": DefaultMaxJobDuration,
		"daemon.executor": ExecutorHost, "daemon.docker_host": DefaultDockerHost,
		"github.api_url": DefaultAPIURL,
	}, "."), nil)
	if loadErr == nil {
		loadErr = k.Load(parsed(raw), nil)
	}
	if loadErr == nil {
		loadErr = k.Load(env.Provider(".", env.Opt{Prefix: EnvPrefix, EnvironFunc: environ, TransformFunc: c.envOverride}), nil)
	}
	cfg := &Config{Source: name}
	if loadErr == nil {
		loadErr = k.UnmarshalWithConf("", cfg, koanf.UnmarshalConf{Tag: "koanf"})
	}
	if loadErr != nil {
		// checkShape removed every value of the wrong kind, so this is a bug, not an operator mistake.
		c.add(SeverityError, "", fmt.Sprintf("internal error decoding the config (please report it): %v", loadErr))
		return nil, c.result()
	}
	c.validate(cfg)
	if err := c.result(); err != nil {
		var cerr *Error
		if errors.As(err, &cerr) {
			cerr.StateDir = cfg.Daemon.StateDir
			resolveFiles(cfg, name)
			cerr.SecretFiles = cfg.SecretFiles()
		}
		return nil, err
	}
	resolveFiles(cfg, name)
	cfg.Warnings = c.problems
	cfg.byName = make(map[string]int, len(cfg.Targets))
	for i, t := range cfg.Targets {
		cfg.byName[t.Name] = i
	}
	return cfg, nil
}

func formatOf(name, forced string) (string, error) {
	if forced != "" {
		if forced != "toml" && forced != "yaml" {
			return "", fmt.Errorf("unknown config format %q: use toml or yaml", forced)
		}
		return forced, nil
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".toml":
		return "toml", nil
	case ".yaml", ".yml":
		return "yaml", nil
	}
	return "", fmt.Errorf("config file %s: unsupported extension %q: name it .toml, .yaml or .yml", name, filepath.Ext(name))
}

// parse runs koanf's parser for format, positioning a syntax error, and indexes key positions.
func parse(c *checker, format string, data []byte) (map[string]any, positions, bool) {
	var (
		raw map[string]any
		err error
	)
	if format == "toml" {
		// YAML skips a UTF-8 byte order mark; go-toml does not. Positions on line 1 then count
		// from after it, as editors show them.
		data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		raw, err = ktoml.Parser().Unmarshal(data)
	} else {
		raw, err = kyaml.Parser().Unmarshal(data)
	}
	switch {
	case err != nil && format == "toml":
		c.problems = append(c.problems, tomlSyntax(c.file, err))
		return nil, nil, false
	case err != nil:
		c.problems = append(c.problems, yamlSyntax(c.file, err))
		return nil, nil, false
	case raw == nil:
		raw = map[string]any{}
	}
	if format == "toml" {
		return raw, tomlPositions(data), true
	}
	return raw, yamlPositions(data), true
}

// parsed hands the already parsed document to koanf as it is. confmap.Provider deep-copies its map,
// a third of a 10,000-target load (BenchmarkValidate); nothing else holds this one.
type parsed map[string]any

func (p parsed) Read() (map[string]any, error) { return p, nil }

func (parsed) ReadBytes() ([]byte, error) {
	return nil, errors.New("config: parsed provides a map only")
}

// applyListDefaults fills defaults inside list entries and optional sections, which koanf's flat
// default keys cannot address.
func applyListDefaults(raw map[string]any) {
	// A target's max_job_duration defaults to the [daemon] one as written (koanf's defaults are
	// not merged yet). A daemon value that is not a duration is reported once, at
	// daemon.max_job_duration, not again at every target.
	var jobBound any = DefaultMaxJobDuration
	if d, ok := raw["daemon"].(map[string]any); ok {
		if v, ok := d["max_job_duration"].(string); ok {
			if _, err := time.ParseDuration(v); err == nil {
				jobBound = v
			}
		}
	}
	if ts, ok := raw["target"].([]any); ok {
		for _, t := range ts {
			m, ok := t.(map[string]any)
			if !ok {
				continue
			}
			setDefault(m, "max_runners", DefaultTargetMaxRunners)
			setDefault(m, "idle_timeout", DefaultIdleTimeout)
			setDefault(m, "startup_timeout", DefaultStartupTimeout)
			setDefault(m, "max_job_duration", jobBound)
			setDefault(m, "mode", "autoscale")
			setDefault(m, "runner_version", "latest")
		}
	}
	if as, ok := raw["account"].([]any); ok {
		for _, a := range as {
			if m, ok := a.(map[string]any); ok {
				setDefault(m, "api_url", DefaultAPIURL)
			}
		}
	}
	if w, ok := raw["webhook"].(map[string]any); ok {
		setDefault(w, "path", DefaultWebhookPath)
		setDefault(w, "poll_interval", DefaultWebhookPollInterval)
	}
	if f, ok := raw["fleet"].(map[string]any); ok {
		setDefault(f, "lease_ttl", DefaultFleetLeaseTTL)
		if name, err := os.Hostname(); err == nil {
			setDefault(f, "host_name", name)
		}
	}
}

func setDefault(m map[string]any, key string, v any) {
	if _, ok := m[key]; !ok {
		m[key] = v
	}
}

// envOverride is koanf's env TransformFunc: RUNNER_MANAGER_MAX_RUNNERS=8 -> daemon.max_runners=8.
// A value of the wrong kind becomes a problem instead of a silent zero.
func (c *checker) envOverride(name, value string) (string, any) {
	key := strings.ToLower(strings.TrimPrefix(name, EnvPrefix))
	if strings.HasPrefix(key, "test_") {
		return "", nil // the test suites' fault-injection switches (RUNNER_MANAGER_TEST_*), not settings
	}
	kind, ok := daemonEnvKeys[key]
	if !ok {
		c.problems = append(c.problems, Problem{Severity: SeverityWarning, Key: name,
			Message: "not a runner-manager setting and ignored (overridable: RUNNER_MANAGER_ + an upper-case [daemon] key)"})
		return "", nil
	}
	path := "daemon." + key
	c.env[path] = name
	switch kind {
	case "int":
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			c.add(SeverityError, path, fmt.Sprintf("%s must be a whole number (got %q)", path, value))
			c.skip[path] = true
			return "", nil
		}
		return path, n
	case "duration":
		if _, err := parseDuration(value); err != nil {
			c.add(SeverityError, path, durationProblem(path, err))
			c.skip[path] = true
			return "", nil
		}
	case "size":
		if !c.checkSizeValue(strings.TrimSpace(value), path) {
			c.skip[path] = true
			return "", nil
		}
		return path, strings.TrimSpace(value)
	case "float":
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			c.add(SeverityError, path, fmt.Sprintf("%s must be a number such as 1.5 (got %q)", path, value))
			c.skip[path] = true
			return "", nil
		}
		return path, f
	}
	return path, value
}

// resolveFiles makes credential paths relative to the config file's directory absolute, as
// Prometheus does, so a config works the same whatever the daemon's working directory.
func resolveFiles(cfg *Config, name string) {
	abs := func(p *string) { *p = resolvePath(name, *p) }
	abs(&cfg.GitHub.TokenFile)
	abs(&cfg.GitHub.PrivateKeyFile)
	abs(&cfg.Daemon.StatusTokenFile)
	for i := range cfg.Targets {
		abs(&cfg.Targets[i].RegistryAuthFile)
	}
	for i := range cfg.Accounts {
		abs(&cfg.Accounts[i].TokenFile)
		abs(&cfg.Accounts[i].PrivateKeyFile)
	}
	if cfg.Webhook != nil {
		abs(&cfg.Webhook.SecretFile)
	}
	if f := cfg.Fleet; f != nil {
		abs(&f.EtcdCAFile)
		abs(&f.EtcdCertFile)
		abs(&f.EtcdKeyFile)
	}
}

// resolvePath is p relative to the directory of the config file name (unchanged if absolute or empty).
func resolvePath(name, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(name), p)
}
