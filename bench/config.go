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

// table is one table of the config file: its keys in order, each value already written as a
// literal both TOML and YAML read the same way (a quoted string, a number, a list).
type table struct {
	name  string
	array bool // a [[name]] entry (a YAML list item) rather than a [name] table
	keys  [][2]string
}

func (t *table) set(key, format string, a ...any) {
	t.keys = append(t.keys, [2]string{key, fmt.Sprintf(format, a...)})
}

// tables is the config s describes, for TOML and YAML to write.
func (s Setup) tables() []table {
	d := table{name: "daemon"}
	d.set("state_dir", "%q", s.StateDir)
	d.set("log_level", "%q", "info")
	d.set("log_format", "%q", "json")
	d.set("max_runners", "%d", max(s.HostMax, 1))
	d.set("poll_interval", "%q", s.PollInterval.String())
	d.set("shutdown_drain_timeout", "%q", "20s")
	for _, kv := range s.runnerUser() {
		d.set(kv[0], "%q", kv[1])
	}
	g := table{name: "github"}
	g.set("api_url", "%q", s.APIURL)
	g.set("token_file", "%q", s.TokenFile)
	if s.PointsPerMinute > 0 {
		g.set("points_per_minute", "%d", s.PointsPerMinute)
	}
	out := []table{d, g}
	if s.Webhook.Listen != "" {
		w := table{name: "webhook"}
		w.set("listen", "%q", s.Webhook.Listen)
		w.set("path", "%q", s.Webhook.Path)
		w.set("secret_file", "%q", s.Webhook.SecretFile)
		out = append(out, w)
	}
	if f := s.Fleet; f.Endpoint != "" {
		ft := table{name: "fleet"}
		ft.set("etcd_endpoints", "[%q]", f.Endpoint)
		ft.set("name", "%q", f.Name)
		ft.set("host_name", "%q", f.Host)
		if f.LeaseTTL > 0 {
			ft.set("lease_ttl", "%q", f.LeaseTTL.String())
		}
		out = append(out, ft)
	}
	for i := 1; i <= s.Targets; i++ {
		t := table{name: "target", array: true}
		t.set("name", "%q", TargetName(i))
		t.set("repository", "%q", Repo(i))
		t.set("max_runners", "%d", s.targetMax(i))
		if s.ScaleSet != "" {
			t.set("scale_set", "%q", s.SetName(i))
		} else {
			t.set("labels", "[%s]", s.labelList())
		}
		if s.IdleTimeout > 0 {
			t.set("idle_timeout", "%q", s.IdleTimeout.String())
		}
		if s.MinIdle > 0 {
			t.set("min_idle", "%d", s.MinIdle)
		}
		for _, kv := range s.containerKeys() {
			t.set(kv[0], "%q", kv[1])
		}
		out = append(out, t)
	}
	for _, org := range s.Orgs {
		t := table{name: "target", array: true}
		t.set("name", "%q", OrgTargetName(org))
		t.set("organization", "%q", org)
		t.set("max_runners", "%d", max(s.TargetMax, 1))
		t.set("labels", "[%s]", s.labelList())
		if s.IdleTimeout > 0 {
			t.set("idle_timeout", "%q", s.IdleTimeout.String())
		}
		out = append(out, t)
	}
	return out
}

// TOML renders the config file.
func (s Setup) TOML() []byte {
	var b strings.Builder
	for _, t := range s.tables() {
		if t.array {
			fmt.Fprintf(&b, "[[%s]]\n", t.name)
		} else {
			fmt.Fprintf(&b, "[%s]\n", t.name)
		}
		for _, kv := range t.keys {
			fmt.Fprintf(&b, "%s = %s\n", kv[0], kv[1])
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// Render is the config file in format: "yaml" (YAML), else TOML.
func (s Setup) Render(format string) []byte {
	if format == "yaml" {
		return s.YAML()
	}
	return s.TOML()
}

// YAML renders the same config as TOML, in YAML.
func (s Setup) YAML() []byte {
	var b strings.Builder
	list := ""
	for _, t := range s.tables() {
		indent := "  "
		if t.array {
			if list != t.name {
				fmt.Fprintf(&b, "%s:\n", t.name)
			}
			indent = "    "
		} else {
			fmt.Fprintf(&b, "%s:\n", t.name)
		}
		list = ""
		if t.array {
			list = t.name
		}
		for i, kv := range t.keys {
			lead := indent
			if t.array && i == 0 {
				lead = "  - "
			}
			fmt.Fprintf(&b, "%s%s: %s\n", lead, kv[0], kv[1])
		}
	}
	return []byte(b.String())
}
