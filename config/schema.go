package config

import (
	"fmt"
	"time"

	"github.com/invopop/jsonschema"
)

// Config is one immutable snapshot of the operator's file after defaults, environment overrides and
// validation. Nothing may modify a *Config once Load has returned it: the engine keeps pointers to
// snapshots and compares old against new on every reload.
type Config struct {
	// Host-wide settings of the daemon.
	Daemon Daemon `koanf:"daemon" json:"daemon" toml:"daemon"`
	// The default GitHub account: its endpoint and credential, used by every target that names no
	// account.
	GitHub GitHub `koanf:"github" json:"github" toml:"github"`
	// Further GitHub accounts, each with its own name, endpoint, credential and request governor;
	// a target uses one with account = "<name>".
	Accounts []Account `koanf:"account" json:"account,omitempty" toml:"account,omitempty"`
	// Optional listener for workflow_job webhook deliveries (polling still runs, slower).
	Webhook *Webhook `koanf:"webhook" json:"webhook,omitempty" toml:"webhook,omitempty"`
	// Optional fleet: hosts with the same fleet name share their targets (by target name) through etcd.
	Fleet *Fleet `koanf:"fleet" json:"fleet,omitempty" toml:"fleet,omitempty"`
	// One entry per repository or organisation runners are kept for.
	Targets []Target `koanf:"target" json:"target,omitempty" toml:"target,omitempty"`

	// Source is the file the snapshot was loaded from (empty for the embedded default).
	Source string `koanf:"-" json:"-" toml:"-"`
	// Warnings are the non-fatal problems Load found (for example an over-committed host). They are
	// returned with a valid config so the daemon can log them and validate can print them.
	Warnings []Problem `koanf:"-" json:"-" toml:"-"`

	// byName indexes Targets by name, built by Load: every target loop looks its target up on
	// every pass, which scanning made quadratic with 10,000 targets. nil in a Config built by hand.
	byName map[string]int
	// fileEnv names, by target index, the env keys Load read from the target's env_file, so
	// Redacted (config print) shows only what the file itself holds.
	fileEnv map[int][]string
}

// Daemon holds host-wide settings. Every scalar here can be overridden by RUNNER_MANAGER_<KEY>
// (for example RUNNER_MANAGER_MAX_RUNNERS=8).
type Daemon struct {
	// Directory of the journal, runner packages, runtime directories and device-flow credentials.
	StateDir string `koanf:"state_dir" json:"state_dir" toml:"state_dir" jsonschema:"default=/var/lib/runner-manager"`
	// Minimum level of log records.
	LogLevel string `koanf:"log_level" json:"log_level" toml:"log_level" jsonschema:"enum=debug,enum=info,enum=warn,enum=error,default=info"`
	// auto: coloured text on a terminal, JSON otherwise.
	LogFormat string `koanf:"log_format" json:"log_format" toml:"log_format" jsonschema:"enum=auto,enum=text,enum=json,default=auto"`
	// Host-wide bound on runners alive at once, across all targets.
	MaxRunners int `koanf:"max_runners" json:"max_runners" toml:"max_runners" jsonschema:"minimum=1,maximum=1000,default=4"`
	// How often each target asks GitHub for queued jobs (targets may override it).
	PollInterval Duration `koanf:"poll_interval" json:"poll_interval" toml:"poll_interval" jsonschema_extras:"default=30s"`
	// How often a repository whose last 3 reads all answered 304 is read instead (targets may
	// override it); absent: 4 x each target's poll interval. At least daemon.poll_interval.
	IdlePollInterval Duration `koanf:"idle_poll_interval" json:"idle_poll_interval,omitempty" toml:"idle_poll_interval,omitempty"`
	// How long a stop (SIGTERM) waits for idle runners to deregister before exiting; busy runners are
	// left running for startup recovery either way.
	ShutdownDrainTimeout Duration `koanf:"shutdown_drain_timeout" json:"shutdown_drain_timeout" toml:"shutdown_drain_timeout" jsonschema_extras:"default=60s"`
	// How long the file must stay unchanged (no watch event, and two reads this far apart with the
	// same sha256) before a change is loaded, so a file still being written is never applied.
	// SIGHUP loads at once.
	ReloadSettle Duration `koanf:"reload_settle" json:"reload_settle" toml:"reload_settle" jsonschema_extras:"default=1s"`
	// Default of every target's max_job_duration: a runner busy longer is stopped, deregistered
	// and recorded failed (max_job_duration). 0s turns the bound off. Default 120h, GitHub's own
	// limit on a self-hosted runner's job (docs/configuration.md).
	MaxJobDuration Duration `koanf:"max_job_duration" json:"max_job_duration" toml:"max_job_duration" jsonschema_extras:"default=120h"`
	// host:port of the Prometheus /metrics listener; empty turns it off.
	MetricsListen string `koanf:"metrics_listen" json:"metrics_listen,omitempty" toml:"metrics_listen,omitempty"`
	// host:port of the status endpoint, or "unix" for a socket in state_dir; empty turns it off.
	StatusListen string `koanf:"status_listen" json:"status_listen,omitempty" toml:"status_listen,omitempty"`
	// File holding the bearer token status over TCP requires (chmod 600); needed off loopback.
	StatusTokenFile string `koanf:"status_token_file" json:"status_token_file,omitempty" toml:"status_token_file,omitempty"`
	// Who runners run as. per-slot: runner slot N runs as its own unprivileged user
	// <runner_user_prefix>N, created by a root daemon when missing (needs root). daemon: as the
	// daemon's own user, so jobs can read its credentials and each other's secrets. Absent: per-slot
	// when the daemon runs as root, daemon (with a warning) otherwise.
	RunnerUser string `koanf:"runner_user" json:"runner_user,omitempty" toml:"runner_user,omitempty" jsonschema:"enum=per-slot,enum=daemon"`
	// Name prefix of the per-slot runner users (slot N runs as PREFIXN).
	RunnerUserPrefix string `koanf:"runner_user_prefix" json:"runner_user_prefix,omitempty" toml:"runner_user_prefix,omitempty" jsonschema:"default=runner-manager-r"`
	// Memory (RAM, no swap beyond it) each runner's whole process tree may use, enforced by its
	// cgroup; a job past it is killed and its attempt fails with out_of_memory. Targets may
	// override it; absent: no limit.
	MemoryMax ByteSize `koanf:"memory_max" json:"memory_max,omitempty" toml:"memory_max,omitempty"`
	// CPUs each runner may use (a decimal number such as 1.5), enforced by its cgroup's CPU quota.
	// Targets may override it; absent: no limit.
	CPUs float64 `koanf:"cpus" json:"cpus,omitempty" toml:"cpus,omitempty" jsonschema:"minimum=0,maximum=1024"`
	// Processes and threads each runner may have at once (its cgroup's pids.max), so a fork bomb
	// stops there. Targets may override it; absent: no limit.
	PidsMax int `koanf:"pids_max" json:"pids_max,omitempty" toml:"pids_max,omitempty" jsonschema:"minimum=0,maximum=4194304"`
	// No runner is launched while the filesystem of the state dir, the runtime root or a target's
	// work_dir has less free space than this; status, an event and a metric say so. Targets may
	// override it; absent: 1GiB.
	MinFreeDisk ByteSize `koanf:"min_free_disk" json:"min_free_disk" toml:"min_free_disk" jsonschema_extras:"default=1GiB"`
	// Where runners run unless a target says otherwise: host (under the shim, as slot users) or
	// container (a fresh container per runner through the Docker Engine API at docker_host).
	Executor string `koanf:"executor" json:"executor,omitempty" toml:"executor,omitempty" jsonschema:"enum=host,enum=container,default=host"`
	// The Docker Engine API socket container runners are created through (unix:///path only).
	DockerHost string `koanf:"docker_host" json:"docker_host,omitempty" toml:"docker_host,omitempty" jsonschema:"default=unix:///var/run/docker.sock"`
}

// GitHub selects the API endpoint and exactly one way to authenticate.
type GitHub struct {
	// REST API base URL: https://api.github.com, a GHES https://HOST/api/v3, or the simulator.
	APIURL string `koanf:"api_url" json:"api_url" toml:"api_url" jsonschema:"format=uri,default=https://api.github.com"`
	// File holding a personal access token (must not be readable by other users).
	TokenFile string `koanf:"token_file" json:"token_file,omitempty" toml:"token_file,omitempty"`
	// GitHub App ID (with installation_id and private_key_file); or app_client_id instead.
	AppID int64 `koanf:"app_id" json:"app_id,omitempty" toml:"app_id,omitempty"`
	// GitHub App client ID (Iv23...), signed into the App JWT in place of app_id, as GitHub recommends; exactly one of the two.
	AppClientID string `koanf:"app_client_id" json:"app_client_id,omitempty" toml:"app_client_id,omitempty"`
	// Installation ID of the GitHub App on the organisation or repositories.
	InstallationID int64 `koanf:"installation_id" json:"installation_id,omitempty" toml:"installation_id,omitempty"`
	// PEM private key of the GitHub App (must not be readable by other users).
	PrivateKeyFile string `koanf:"private_key_file" json:"private_key_file,omitempty" toml:"private_key_file,omitempty"`
	// OAuth device-flow sign-in (`runner-manager auth login`).
	DeviceFlow *DeviceFlow `koanf:"device_flow" json:"device_flow,omitempty" toml:"device_flow,omitempty"`
	// Ceiling of GitHub secondary-limit points (GET 1, POST/PATCH/PUT/DELETE 5) spent per minute for the credential's account; GitHub refuses above 900. Absent or 0: 600.
	PointsPerMinute int `koanf:"points_per_minute" json:"points_per_minute,omitempty" toml:"points_per_minute,omitempty" jsonschema:"minimum=0,maximum=900,default=600"`
	// REST requests in flight at once per account; GitHub refuses above 100. Absent or 0: 8.
	MaxConcurrentRequests int `koanf:"max_concurrent_requests" json:"max_concurrent_requests,omitempty" toml:"max_concurrent_requests,omitempty" jsonschema:"minimum=0,maximum=100,default=8"`
}

// GitHub's own secondary limits, the bounds of points_per_minute and max_concurrent_requests.
const (
	GitHubPointsPerMinute = 900
	GitHubConcurrent      = 100
)

// Account is one more GitHub account: a name targets refer to, and the keys of [github] for its own
// endpoint (github.com, GHES or GHE.com), credential and request governor.
type Account struct {
	// The name targets use in account = "<name>"; unique, and not "default" ([github] is that one).
	Name string `koanf:"name" json:"name" toml:"name" jsonschema:"required"`
	// The keys of [github]: api_url, one credential, points_per_minute, max_concurrent_requests.
	GitHub `koanf:",squash"`
}

// DefaultAccount is the name of the [github] account in status, metrics and messages.
const DefaultAccount = "default"

// DeviceFlow is OAuth device-flow sign-in; the resulting token pair lives in the state dir.
type DeviceFlow struct {
	// Client ID of the OAuth or GitHub App used for the device flow.
	ClientID string `koanf:"client_id" json:"client_id" toml:"client_id"`
}

// AuthKind names which credential a GitHub section configures.
type AuthKind string

// The credential kinds; AuthNone means the section configures none.
const (
	AuthNone       AuthKind = ""
	AuthTokenFile  AuthKind = "token_file"
	AuthApp        AuthKind = "app"
	AuthDeviceFlow AuthKind = "device_flow"
)

// Webhook is the optional listener for workflow_job deliveries.
type Webhook struct {
	// host:port to listen on.
	Listen string `koanf:"listen" json:"listen" toml:"listen"`
	// URL path deliveries are posted to.
	Path string `koanf:"path" json:"path" toml:"path" jsonschema:"default=/webhook"`
	// File holding the webhook secret that signs X-Hub-Signature-256.
	SecretFile string `koanf:"secret_file" json:"secret_file" toml:"secret_file"`
	// Poll interval while webhooks drive demand: the slower poll that reconciles a missed delivery.
	// A target's own poll_interval still wins.
	PollInterval Duration `koanf:"poll_interval" json:"poll_interval" toml:"poll_interval" jsonschema_extras:"default=2m"`
}

// Fleet makes this host one of several serving the same targets, coordinated through etcd (docs/fleet.md).
type Fleet struct {
	// etcd client URLs, such as https://etcd-1:2379.
	EtcdEndpoints []string `koanf:"etcd_endpoints" json:"etcd_endpoints" toml:"etcd_endpoints" jsonschema:"required"`
	// CA bundle that signs the etcd servers' certificates (https endpoints).
	EtcdCAFile string `koanf:"etcd_ca_file" json:"etcd_ca_file,omitempty" toml:"etcd_ca_file,omitempty"`
	// Client certificate for etcd (with etcd_key_file).
	EtcdCertFile string `koanf:"etcd_cert_file" json:"etcd_cert_file,omitempty" toml:"etcd_cert_file,omitempty"`
	// Private key of the client certificate (must not be readable by other users).
	EtcdKeyFile string `koanf:"etcd_key_file" json:"etcd_key_file,omitempty" toml:"etcd_key_file,omitempty"`
	// The fleet's name: the etcd key prefix; hosts with the same name share targets.
	Name string `koanf:"name" json:"name" toml:"name" jsonschema:"required"`
	// This host's name in the fleet (default: the machine's host name); unique among live hosts.
	HostName string `koanf:"host_name" json:"host_name" toml:"host_name"`
	// How long a host that stopped answering still counts: its supply and leaderships end after this.
	LeaseTTL Duration `koanf:"lease_ttl" json:"lease_ttl" toml:"lease_ttl" jsonschema:"default=10s"`
}

// Target is one repository or organisation and the scale policy of the runners kept for it.
// Name is its identity across reloads: a renamed target is a removed one plus an added one.
type Target struct {
	// Unique name; the identity of the target across reloads.
	Name string `koanf:"name" json:"name" toml:"name" jsonschema:"required"`
	// "owner/repo" (exclusive with organization and enterprise).
	Repository string `koanf:"repository" json:"repository,omitempty" toml:"repository,omitempty"`
	// Organisation login (exclusive with repository and enterprise).
	Organization string `koanf:"organization" json:"organization,omitempty" toml:"organization,omitempty"`
	// Enterprise slug (exclusive with repository and organization): enterprise-level runners.
	// Demand comes from a scale set or from webhooks; GitHub has no enterprise list of queued jobs
	// to poll.
	Enterprise string `koanf:"enterprise" json:"enterprise,omitempty" toml:"enterprise,omitempty"`
	// The [[account]] whose credential serves this target; absent: the [github] account.
	Account string `koanf:"account" json:"account,omitempty" toml:"account,omitempty"`
	// Runner group of the organisation or enterprise (empty = Default).
	RunnerGroup string `koanf:"runner_group" json:"runner_group,omitempty" toml:"runner_group,omitempty"`
	// Custom labels added to the runners; a job runs here when its runs-on labels are a subset.
	// With scale_set: empty, or exactly [scale_set] (a scale set carries its name as its label).
	Labels []string `koanf:"labels" json:"labels,omitempty" toml:"labels,omitempty"`
	// Take demand from the runner scale set of this name (GitHub's message queue, no polling);
	// jobs reach it with runs-on: <name>. Created or updated by the daemon.
	ScaleSet string `koanf:"scale_set" json:"scale_set,omitempty" toml:"scale_set,omitempty"`
	// Delete the scale set at GitHub when the target is removed (default: only its session is closed).
	DeleteScaleSetOnRemove bool `koanf:"delete_scale_set_on_remove" json:"delete_scale_set_on_remove,omitempty" toml:"delete_scale_set_on_remove,omitempty"`
	// Bound on this target's runners alive at once.
	MaxRunners int `koanf:"max_runners" json:"max_runners" toml:"max_runners" jsonschema:"minimum=1,maximum=1000,default=1"`
	// Runners kept idle and registered, waiting for jobs.
	MinIdle int `koanf:"min_idle" json:"min_idle" toml:"min_idle" jsonschema:"minimum=0,default=0"`
	// Windows in which other min_idle and max_runners apply: the first listed entry whose cron
	// matches the current minute is in force; outside every window the target's own apply.
	Schedule []Schedule `koanf:"schedule" json:"schedule,omitempty" toml:"schedule,omitempty"`
	// An idle runner beyond min_idle is removed after this long.
	IdleTimeout Duration `koanf:"idle_timeout" json:"idle_timeout" toml:"idle_timeout" jsonschema_extras:"default=5m"`
	// A runner GitHub has not listed online within this long of its start (or offline this long
	// while idle) is replaced: deregistered, stopped and recorded failed (registration_timed_out).
	StartupTimeout Duration `koanf:"startup_timeout" json:"startup_timeout" toml:"startup_timeout" jsonschema_extras:"default=5m"`
	// A runner busy longer is stopped (SIGTERM, then SIGKILL), deregistered and recorded failed
	// (max_job_duration); 0s: never. Absent: daemon.max_job_duration.
	MaxJobDuration Duration `koanf:"max_job_duration" json:"max_job_duration" toml:"max_job_duration" jsonschema_extras:"default=120h"`
	// Overrides daemon.poll_interval for this target; 0 uses the daemon's.
	PollInterval Duration `koanf:"poll_interval" json:"poll_interval,omitempty" toml:"poll_interval,omitempty"`
	// Overrides daemon.idle_poll_interval for this target; absent uses the daemon's, else 4 x this
	// target's poll interval. At least the target's poll interval.
	IdlePollInterval Duration `koanf:"idle_poll_interval" json:"idle_poll_interval,omitempty" toml:"idle_poll_interval,omitempty"`
	// autoscale launches runners; monitor only observes demand and reports it.
	Mode string `koanf:"mode" json:"mode" toml:"mode" jsonschema:"enum=autoscale,enum=monitor,default=autoscale"`
	// false keeps the target in the file without a running loop (its runners drain).
	Enabled *bool `koanf:"enabled" json:"enabled,omitempty" toml:"enabled,omitempty" jsonschema:"default=true"`
	// "latest" or an exact actions/runner version x.y.z.
	RunnerVersion string `koanf:"runner_version" json:"runner_version" toml:"runner_version" jsonschema:"default=latest"`
	// Absolute directory under which each runner's own work directory <work_dir>/<attempt id> is
	// made and removed with it (default: inside the runner's runtime directory).
	WorkDir string `koanf:"work_dir" json:"work_dir,omitempty" toml:"work_dir,omitempty"`
	// true: work_dir itself is every runner's work directory, shared by the target's jobs and never
	// cleaned (files one job leaves are seen by the next). false: each runner gets <work_dir>/<attempt
	// id>, removed with its runtime directory. true needs daemon.runner_user = "daemon".
	SharedWorkDir bool `koanf:"shared_work_dir" json:"shared_work_dir,omitempty" toml:"shared_work_dir,omitempty"`
	// Environment variables given to the runner process; values are never printed.
	Env map[string]string `koanf:"env" json:"env,omitempty" toml:"env,omitempty"`
	// A file of KEY=VALUE lines added to env (a chmod 600 credential file, like token_file): keeps
	// secrets out of the config file. A name in both is an error. Read at each load and reload.
	EnvFile string `koanf:"env_file" json:"env_file,omitempty" toml:"env_file,omitempty"`
	// Overrides daemon.memory_max for this target's runners; absent uses the daemon's.
	MemoryMax ByteSize `koanf:"memory_max" json:"memory_max,omitempty" toml:"memory_max,omitempty"`
	// Overrides daemon.cpus for this target's runners; absent uses the daemon's.
	CPUs float64 `koanf:"cpus" json:"cpus,omitempty" toml:"cpus,omitempty" jsonschema:"minimum=0,maximum=1024"`
	// Overrides daemon.pids_max for this target's runners; absent uses the daemon's.
	PidsMax int `koanf:"pids_max" json:"pids_max,omitempty" toml:"pids_max,omitempty" jsonschema:"minimum=0,maximum=4194304"`
	// Overrides daemon.min_free_disk for this target's launches; absent uses the daemon's.
	MinFreeDisk ByteSize `koanf:"min_free_disk" json:"min_free_disk,omitempty" toml:"min_free_disk,omitempty"`
	// Must be absent or true: just-in-time runners are always ephemeral.
	Ephemeral *bool `koanf:"ephemeral" json:"ephemeral,omitempty" toml:"ephemeral,omitempty"`
	// Where this target's runners run: host or container; absent: daemon.executor. The keys below
	// apply to executor = "container" only (docs/configuration.md, "Container runners").
	Executor string `koanf:"executor" json:"executor,omitempty" toml:"executor,omitempty" jsonschema:"enum=host,enum=container"`
	// The image each runner's container is created from: it provides the runner's dependencies.
	// name[:tag] or name@sha256:<digest> (pinned: nothing else is accepted). Required for containers.
	Image string `koanf:"image" json:"image,omitempty" toml:"image,omitempty"`
	// When the image is pulled: missing (only when not present), always (before each launch), never.
	ImagePull string `koanf:"image_pull" json:"image_pull,omitempty" toml:"image_pull,omitempty" jsonschema:"enum=missing,enum=always,enum=never,default=missing"`
	// File holding the registry credentials for pulls, as `docker login` writes them (a config.json
	// with "auths"); must not be readable by other users.
	RegistryAuthFile string `koanf:"registry_auth_file" json:"registry_auth_file,omitempty" toml:"registry_auth_file,omitempty"`
	// true: run the runner the image ships (/home/runner/run.sh or RUNNER_DIR) instead of mounting
	// the verified runner package into the container.
	RunnerInImage bool `koanf:"runner_in_image" json:"runner_in_image,omitempty" toml:"runner_in_image,omitempty"`
	// The Docker network of the container: host, bridge or a network's name. Required for containers.
	Network string `koanf:"network" json:"network,omitempty" toml:"network,omitempty"`
	// Host directories mounted into each container, "/host/path:/container/path", read-only
	// unless ":rw" is added.
	Volumes []string `koanf:"volumes" json:"volumes,omitempty" toml:"volumes,omitempty"`
	// true: each job gets a Docker daemon of its own (a Docker-in-Docker sidecar from docker_image),
	// removed with the job; it never sees the host's containers.
	Docker bool `koanf:"docker" json:"docker,omitempty" toml:"docker,omitempty"`
	// The image of the Docker-in-Docker sidecar (with docker = true).
	DockerImage string `koanf:"docker_image" json:"docker_image,omitempty" toml:"docker_image,omitempty"`
}

// Schedule is one window of a target's schedule and the values in force inside it
// (docs/configuration.md, "Schedules").
type Schedule struct {
	// Five-field cron expression (minute hour day-of-month month day-of-week); every minute it
	// matches is inside the window: "* 8-17 * * 1-5" is 08:00 to 17:59 on weekdays.
	Cron string `koanf:"cron" json:"cron" toml:"cron" jsonschema:"required"`
	// IANA time zone the cron is read in, such as Europe/Berlin. Absent: UTC.
	TimeZone string `koanf:"time_zone" json:"time_zone,omitempty" toml:"time_zone,omitempty" jsonschema:"default=UTC"`
	// Runners kept idle while this entry is in force, instead of the target's min_idle.
	MinIdle int `koanf:"min_idle" json:"min_idle" toml:"min_idle" jsonschema:"minimum=0,default=0"`
	// Bound on the target's runners while this entry is in force; at most the target's
	// max_runners. Absent or 0: the target's.
	MaxRunners int `koanf:"max_runners" json:"max_runners,omitempty" toml:"max_runners,omitempty" jsonschema:"minimum=0,maximum=1000"`
}

// Duration is a time.Duration written as a Go duration string ("30s", "5m") in the file.
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats the duration as Go does ("1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes the duration as a Go duration string, so JSON and TOML output read like the file.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses a Go duration string ("30s", "5m", "1h30m").
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil && durationSyntax.Match(b) {
		return errTooLarge{written: string(b)}
	}
	if err != nil {
		return fmt.Errorf("%q is not a duration (use a number with a unit, such as 30s or 5m)", b)
	}
	*d = Duration(v)
	return nil
}

// JSONSchema makes durations strings in docs/config.schema.json, matching what the file holds.
func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`,
		Description: "A Go duration such as 30s, 5m or 1h30m (0 alone needs no unit).",
	}
}

// The JSONSchemaExtend methods add to the reflected schema the rules of validate.go that JSON Schema
// can express, from validate.go's own patterns and limits, so editors flag what validate refuses.
// What JSON Schema cannot say (unique names, min_idle <= max_runners, files on the host) stays in
// validate only; TestSchemaAgreesWithValidate names those examples.

// JSONSchemaExtend: exactly one of repository, organization and enterprise; names, labels and versions as
// validate accepts them; ephemeral only true.
func (Target) JSONSchemaExtend(s *jsonschema.Schema) {
	name := property(s, "name")
	name.Pattern, name.MaxLength = targetName.String(), uintPtr(maxTargetLen)
	property(s, "repository").Pattern = "^" + ownerPattern + "/" + repoPattern + "$"
	org := property(s, "organization")
	org.Pattern, org.MaxLength = "^"+ownerPattern+"$", uintPtr(maxOwnerLen)
	property(s, "runner_group").MaxLength = uintPtr(maxRepoLen)
	label := property(s, "labels").Items
	label.Pattern, label.MinLength, label.MaxLength = labelChars.String(), uintPtr(1), uintPtr(maxLabelLen)
	property(s, "runner_version").Pattern = "^(latest|" + semverPattern + ")$"
	property(s, "ephemeral").Const = true
	set := property(s, "scale_set")
	set.Pattern, set.MinLength, set.MaxLength = labelChars.String(), uintPtr(1), uintPtr(maxLabelLen)
	property(s, "enterprise").Pattern = "^" + ownerPattern + "$"
	s.OneOf = []*jsonschema.Schema{{Required: []string{"repository"}}, {Required: []string{"organization"}}, {Required: []string{"enterprise"}}}
	// delete_scale_set_on_remove = true needs a scale_set.
	s.If = &jsonschema.Schema{Properties: jsonschema.NewProperties(), Required: []string{"delete_scale_set_on_remove"}}
	s.If.Properties.Set("delete_scale_set_on_remove", &jsonschema.Schema{Const: true})
	s.Then = &jsonschema.Schema{Required: []string{"scale_set"}}
	// executor = "container" needs image and network (validateExecutor; a daemon-wide default
	// executor is beyond a target's schema).
	container := &jsonschema.Schema{Properties: jsonschema.NewProperties(), Required: []string{"executor"}}
	container.Properties.Set("executor", &jsonschema.Schema{Const: ExecutorContainer})
	s.AllOf = append(s.AllOf, &jsonschema.Schema{If: container, Then: &jsonschema.Schema{Required: []string{"image", "network"}}})
}

// JSONSchemaExtend: at most one kind of credential (validate: "configure exactly one credential").
func (GitHub) JSONSchemaExtend(s *jsonschema.Schema) {
	kinds := [][]string{{"token_file"}, {"app_id", "app_client_id", "installation_id", "private_key_file"}, {"device_flow"}}
	// The App is named once: by its ID or by its client ID.
	property(s, "app_client_id").Pattern = appClientID.String()
	s.AllOf = append(s.AllOf, &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{"app_id", "app_client_id"}}})
	for i, a := range kinds {
		for _, b := range kinds[i+1:] {
			for _, ka := range a {
				for _, kb := range b {
					s.AllOf = append(s.AllOf, &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{ka, kb}}})
				}
			}
		}
	}
}

// JSONSchemaExtend: the credential rules of [github], and a name as validate accepts it.
func (a Account) JSONSchemaExtend(s *jsonschema.Schema) {
	a.GitHub.JSONSchemaExtend(s)
	name := property(s, "name")
	name.Pattern, name.MaxLength = targetName.String(), uintPtr(maxTargetLen)
	name.Not = &jsonschema.Schema{Const: DefaultAccount}
}

func property(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := s.Properties.Get(name)
	if !ok {
		panic("config schema: no property " + name) // a renamed field; TestSchema catches it
	}
	return p
}

func uintPtr(n int) *uint64 { u := uint64(n); return &u }

// PerSlotRunners reports whether runners run as per-slot users under a daemon that is root or
// not: when runner_user says per-slot, or when it is unset and the daemon is root. (A non-root
// daemon with per-slot set cannot start; the daemon says so.)
func (d Daemon) PerSlotRunners(root bool) bool {
	return d.RunnerUser == RunnerUserPerSlot || d.RunnerUser == "" && root
}

// IsEnabled reports whether the target should have a running loop (absent means enabled).
func (t Target) IsEnabled() bool { return t.Enabled == nil || *t.Enabled }

// Identity is what a target's runners are registered against ("repo:owner/name", "org:name" or
// "enterprise:slug", after "account:<name>/" for a target of an [[account]], with "/scale_set:<name>" appended for a scale-set target, whose runners belong to that set).
// A change of identity is the only change that restarts a target's loop.
func (t Target) Identity() string {
	id := "org:" + t.Organization
	switch {
	case t.Repository != "":
		id = "repo:" + t.Repository
	case t.Enterprise != "":
		id = "enterprise:" + t.Enterprise
	}
	if t.Account != "" {
		// Another account may be another GitHub (api_url): the same name there is another scope.
		id = "account:" + t.Account + "/" + id
	}
	if t.ScaleSet != "" {
		id += ScaleSetIdentity + t.ScaleSet
	}
	return id
}

// ScaleSetIdentity separates a scale-set target's scope from its set's name in Identity; neither
// a login, a repository nor a label can contain it.
const ScaleSetIdentity = "/scale_set:"

// Auth reports which credential kind the section configures (AuthNone if none; Validate rejects a
// section that configures more than one, see authKinds).
func (g GitHub) Auth() AuthKind {
	switch {
	case g.TokenFile != "":
		return AuthTokenFile
	case g.AppID != 0 || g.AppClientID != "" || g.PrivateKeyFile != "" || g.InstallationID != 0:
		return AuthApp
	case g.DeviceFlow != nil:
		return AuthDeviceFlow
	}
	return AuthNone
}
