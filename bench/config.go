package bench

import (
	"fmt"
	"strings"
	"time"
)

// Setup describes a generated daemon config: n repository targets acme/r0001..., one label each.
type Setup struct {
	StateDir     string
	APIURL       string
	TokenFile    string
	Targets      int
	HostMax      int           // daemon.max_runners
	TargetMax    int           // every target's max_runners
	PollInterval time.Duration // daemon.poll_interval
	IdleTimeout  time.Duration // every target's idle_timeout; 0 = the default
	Labels       []string      // every target's labels; default ["bench"]
	// Edited, when between 1 and Targets, gives that target max_runners TargetMax+1: a one-target edit.
	Edited int
	// Webhook, when Listen is set, adds the [webhook] section.
	Webhook struct{ Listen, Path, SecretFile string }
	// ScaleSet, when set, makes every target take its demand from the scale set of this name
	// (target i's set is ScaleSet with i appended when there are several); labels are left out.
	ScaleSet string
	// MinIdle is every target's min_idle (0: the default).
	MinIdle int
	// PointsPerMinute is github.points_per_minute, the governor's ceiling (0: the default).
	PointsPerMinute int
	// Orgs adds one organization target per login after the repository targets (OrgTargetName),
	// with the same labels, max_runners and idle_timeout.
	Orgs []string
	// Fleet, when Endpoint is set, adds the [fleet] section: the host joins fleet Name on that etcd
	// as Host (lease_ttl LeaseTTL, or the default when 0).
	Fleet struct {
		Endpoint, Name, Host string
		LeaseTTL             time.Duration
	}
	// SlotPrefix, when set, runs runners as per-slot users named with this prefix (a root
	// daemon) instead of the daemon's own user.
	SlotPrefix string
	// Container, when Image is set, runs every target's runners in containers of Image on
	// Network (executor = "container", image_pull = "never") through the Engine at DockerHost.
	Container struct{ Image, Network, DockerHost string }
}

// runnerUser is the [daemon] lines choosing whose uid runners run as, as key-value pairs.
func (s Setup) runnerUser() [][2]string {
	if s.SlotPrefix == "" {
		return [][2]string{{"runner_user", "daemon"}}
	}
	kv := [][2]string{{"runner_user", "per-slot"}, {"runner_user_prefix", s.SlotPrefix}}
	if s.Container.DockerHost != "" {
		kv = append(kv, [2]string{"docker_host", s.Container.DockerHost})
	}
	return kv
}

// containerKeys are a target's container keys, as key-value pairs (none for host runners).
func (s Setup) containerKeys() [][2]string {
	if s.Container.Image == "" {
		return nil
	}
	return [][2]string{{"executor", "container"}, {"image", s.Container.Image}, {"network", s.Container.Network}, {"image_pull", "never"}}
}

// SetName is target i's scale set when Setup.ScaleSet is set.
func (s Setup) SetName(i int) string {
	if s.Targets > 1 {
		return fmt.Sprintf("%s-%d", s.ScaleSet, i)
	}
	return s.ScaleSet
}

// OrgTargetName names the organization target of org.
func OrgTargetName(org string) string { return "org-" + org }

// Org is the organisation owning every generated repository.
const Org = "acme"

// TargetName and Repo name target i (1-based) and its repository.
func TargetName(i int) string { return fmt.Sprintf("t%04d", i) }

// Repo is target i's repository, "acme/r0001".
func Repo(i int) string { return fmt.Sprintf("%s/r%04d", Org, i) }

// labelList is the targets' labels as a quoted, comma-separated list (the same in TOML and YAML).
func (s Setup) labelList() string {
	labels := s.Labels
	if len(labels) == 0 {
		labels = []string{"bench"}
	}
	quoted := make([]string, len(labels))
	for i, l := range labels {
		quoted[i] = fmt.Sprintf("%q", l)
	}
	return strings.Join(quoted, ", ")
}

// targetMax is target i's max_runners.
func (s Setup) targetMax(i int) int {
	if i == s.Edited {
		return max(s.TargetMax, 1) + 1
	}
	return max(s.TargetMax, 1)
}

// TOML renders the config file.
func (s Setup) TOML() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "[daemon]\nstate_dir = %q\nlog_level = \"info\"\nlog_format = \"json\"\nmax_runners = %d\n", s.StateDir, max(s.HostMax, 1))
	fmt.Fprintf(&b, "poll_interval = %q\nshutdown_drain_timeout = \"20s\"\n", s.PollInterval.String())
	for _, kv := range s.runnerUser() {
		fmt.Fprintf(&b, "%s = %q\n", kv[0], kv[1])
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "[github]\napi_url = %q\ntoken_file = %q\n", s.APIURL, s.TokenFile)
	if s.PointsPerMinute > 0 {
		fmt.Fprintf(&b, "points_per_minute = %d\n", s.PointsPerMinute)
	}
	b.WriteString("\n")
	if s.Webhook.Listen != "" {
		fmt.Fprintf(&b, "[webhook]\nlisten = %q\npath = %q\nsecret_file = %q\n\n", s.Webhook.Listen, s.Webhook.Path, s.Webhook.SecretFile)
	}
	if f := s.Fleet; f.Endpoint != "" {
		fmt.Fprintf(&b, "[fleet]\netcd_endpoints = [%q]\nname = %q\nhost_name = %q\n", f.Endpoint, f.Name, f.Host)
		if f.LeaseTTL > 0 {
			fmt.Fprintf(&b, "lease_ttl = %q\n", f.LeaseTTL.String())
		}
		b.WriteString("\n")
	}
	for i := 1; i <= s.Targets; i++ {
		fmt.Fprintf(&b, "[[target]]\nname = %q\nrepository = %q\nmax_runners = %d\n", TargetName(i), Repo(i), s.targetMax(i))
		if s.ScaleSet != "" {
			fmt.Fprintf(&b, "scale_set = %q\n", s.SetName(i))
		} else {
			fmt.Fprintf(&b, "labels = [%s]\n", s.labelList())
		}
		if s.IdleTimeout > 0 {
			fmt.Fprintf(&b, "idle_timeout = %q\n", s.IdleTimeout.String())
		}
		if s.MinIdle > 0 {
			fmt.Fprintf(&b, "min_idle = %d\n", s.MinIdle)
		}
		for _, kv := range s.containerKeys() {
			fmt.Fprintf(&b, "%s = %q\n", kv[0], kv[1])
		}
		b.WriteString("\n")
	}
	for _, org := range s.Orgs {
		fmt.Fprintf(&b, "[[target]]\nname = %q\norganization = %q\nmax_runners = %d\nlabels = [%s]\n", OrgTargetName(org), org, max(s.TargetMax, 1), s.labelList())
		if s.IdleTimeout > 0 {
			fmt.Fprintf(&b, "idle_timeout = %q\n", s.IdleTimeout.String())
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// YAML renders the same config as TOML, in YAML.
func (s Setup) YAML() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "daemon:\n  state_dir: %q\n  log_level: info\n  log_format: json\n  max_runners: %d\n", s.StateDir, max(s.HostMax, 1))
	fmt.Fprintf(&b, "  poll_interval: %q\n  shutdown_drain_timeout: 20s\n", s.PollInterval.String())
	for _, kv := range s.runnerUser() {
		fmt.Fprintf(&b, "  %s: %q\n", kv[0], kv[1])
	}
	fmt.Fprintf(&b, "github:\n  api_url: %q\n  token_file: %q\n", s.APIURL, s.TokenFile)
	if s.PointsPerMinute > 0 {
		fmt.Fprintf(&b, "  points_per_minute: %d\n", s.PointsPerMinute)
	}
	if s.Webhook.Listen != "" {
		fmt.Fprintf(&b, "webhook:\n  listen: %q\n  path: %q\n  secret_file: %q\n", s.Webhook.Listen, s.Webhook.Path, s.Webhook.SecretFile)
	}
	if f := s.Fleet; f.Endpoint != "" {
		fmt.Fprintf(&b, "fleet:\n  etcd_endpoints: [%q]\n  name: %q\n  host_name: %q\n", f.Endpoint, f.Name, f.Host)
		if f.LeaseTTL > 0 {
			fmt.Fprintf(&b, "  lease_ttl: %q\n", f.LeaseTTL.String())
		}
	}
	b.WriteString("target:\n")
	for i := 1; i <= s.Targets; i++ {
		fmt.Fprintf(&b, "  - name: %q\n    repository: %q\n    max_runners: %d\n", TargetName(i), Repo(i), s.targetMax(i))
		if s.ScaleSet != "" {
			fmt.Fprintf(&b, "    scale_set: %q\n", s.SetName(i))
		} else {
			fmt.Fprintf(&b, "    labels: [%s]\n", s.labelList())
		}
		if s.IdleTimeout > 0 {
			fmt.Fprintf(&b, "    idle_timeout: %q\n", s.IdleTimeout.String())
		}
		if s.MinIdle > 0 {
			fmt.Fprintf(&b, "    min_idle: %d\n", s.MinIdle)
		}
		for _, kv := range s.containerKeys() {
			fmt.Fprintf(&b, "    %s: %q\n", kv[0], kv[1])
		}
	}
	for _, org := range s.Orgs {
		fmt.Fprintf(&b, "  - name: %q\n    organization: %q\n    max_runners: %d\n    labels: [%s]\n", OrgTargetName(org), org, max(s.TargetMax, 1), s.labelList())
		if s.IdleTimeout > 0 {
			fmt.Fprintf(&b, "    idle_timeout: %q\n", s.IdleTimeout.String())
		}
	}
	return []byte(b.String())
}
