package config

import "time"

// Config is one immutable snapshot of the operator's file after defaults, environment overrides and
// validation. Nothing may modify a *Config once Load has returned it: the engine keeps pointers to
// snapshots and compares old against new on every reload.
type Config struct {
	Daemon  Daemon   `koanf:"daemon" json:"daemon"`
	GitHub  GitHub   `koanf:"github" json:"github"`
	Webhook *Webhook `koanf:"webhook" json:"webhook,omitempty"`
	Targets []Target `koanf:"target" json:"target,omitempty"`

	// Source is the file the snapshot was loaded from (empty for the embedded default).
	Source string `koanf:"-" json:"-"`
}

// Daemon holds host-wide settings. Every scalar here can be overridden by RUNNER_MANAGER_<KEY>
// (for example RUNNER_MANAGER_MAX_RUNNERS=8).
type Daemon struct {
	StateDir             string   `koanf:"state_dir" json:"state_dir"`
	LogLevel             string   `koanf:"log_level" json:"log_level"`   // debug|info|warn|error
	LogFormat            string   `koanf:"log_format" json:"log_format"` // auto|text|json
	MaxRunners           int      `koanf:"max_runners" json:"max_runners"`
	PollInterval         Duration `koanf:"poll_interval" json:"poll_interval"`
	ShutdownDrainTimeout Duration `koanf:"shutdown_drain_timeout" json:"shutdown_drain_timeout"`
	MetricsListen        string   `koanf:"metrics_listen" json:"metrics_listen,omitempty"` // "" = off
	StatusListen         string   `koanf:"status_listen" json:"status_listen,omitempty"`   // "" = off; "unix" = socket in state_dir
}

// GitHub selects the API endpoint and exactly one way to authenticate.
type GitHub struct {
	APIURL         string      `koanf:"api_url" json:"api_url"`
	TokenFile      string      `koanf:"token_file" json:"token_file,omitempty"`
	AppID          int64       `koanf:"app_id" json:"app_id,omitempty"`
	InstallationID int64       `koanf:"installation_id" json:"installation_id,omitempty"`
	PrivateKeyFile string      `koanf:"private_key_file" json:"private_key_file,omitempty"`
	DeviceFlow     *DeviceFlow `koanf:"device_flow" json:"device_flow,omitempty"`
}

// DeviceFlow is OAuth device-flow sign-in; the resulting token pair lives in the state dir.
type DeviceFlow struct {
	ClientID string `koanf:"client_id" json:"client_id"`
}

// AuthKind names which credential a GitHub section configures.
type AuthKind string

const (
	AuthNone       AuthKind = ""
	AuthTokenFile  AuthKind = "token_file"
	AuthApp        AuthKind = "app"
	AuthDeviceFlow AuthKind = "device_flow"
)

// Webhook is the optional listener for workflow_job deliveries.
type Webhook struct {
	Listen     string `koanf:"listen" json:"listen"`
	Path       string `koanf:"path" json:"path"`
	SecretFile string `koanf:"secret_file" json:"secret_file"`
}

// Target is one repository or organisation and the scale policy of the runners kept for it.
// Name is its identity across reloads: a renamed target is a removed one plus an added one.
type Target struct {
	Name          string            `koanf:"name" json:"name"`
	Repository    string            `koanf:"repository" json:"repository,omitempty"`     // "owner/repo"
	Organization  string            `koanf:"organization" json:"organization,omitempty"` // "org"
	RunnerGroup   string            `koanf:"runner_group" json:"runner_group,omitempty"`
	Labels        []string          `koanf:"labels" json:"labels,omitempty"`
	MaxRunners    int               `koanf:"max_runners" json:"max_runners"`
	MinIdle       int               `koanf:"min_idle" json:"min_idle"`
	IdleTimeout   Duration          `koanf:"idle_timeout" json:"idle_timeout"`
	PollInterval  Duration          `koanf:"poll_interval" json:"poll_interval,omitempty"` // 0 = daemon's
	Mode          string            `koanf:"mode" json:"mode"`                             // autoscale|monitor
	Enabled       *bool             `koanf:"enabled" json:"enabled,omitempty"`             // nil = true
	RunnerVersion string            `koanf:"runner_version" json:"runner_version"`         // latest|x.y.z
	WorkDir       string            `koanf:"work_dir" json:"work_dir,omitempty"`
	Env           map[string]string `koanf:"env" json:"env,omitempty"`
	Ephemeral     *bool             `koanf:"ephemeral" json:"ephemeral,omitempty"` // must be nil or true
}

// Duration is a time.Duration written as a Go duration string ("30s", "5m") in the file.
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// IsEnabled reports whether the target should have a running loop (absent means enabled).
func (t Target) IsEnabled() bool { return t.Enabled == nil || *t.Enabled }

// Identity is what a target's runners are registered against ("repo:owner/name" or "org:name").
// A change of identity is the only change that restarts a target's loop.
func (t Target) Identity() string {
	if t.Repository != "" {
		return "repo:" + t.Repository
	}
	return "org:" + t.Organization
}

// Auth reports which credential kind the section configures (AuthNone if none or ambiguous is
// for Validate to reject).
func (g GitHub) Auth() AuthKind {
	switch {
	case g.TokenFile != "":
		return AuthTokenFile
	case g.AppID != 0 || g.PrivateKeyFile != "" || g.InstallationID != 0:
		return AuthApp
	case g.DeviceFlow != nil:
		return AuthDeviceFlow
	}
	return AuthNone
}
