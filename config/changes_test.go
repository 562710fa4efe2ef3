package config

import (
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// schemaPaths walks t by its koanf tags and returns every leaf key's schema path; a list of
// tables (target) contributes its entries' keys under its own name.
func schemaPaths(t reflect.Type, prefix string) []string {
	var out []string
	for _, f := range keyFields(t) {
		tag := f.Tag.Get("koanf")
		ft := f.Type
		for ft.Kind() == reflect.Pointer || (ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct) {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != durationType {
			out = append(out, schemaPaths(ft, joinPath(prefix, tag))...)
			continue
		}
		out = append(out, joinPath(prefix, tag))
	}
	return out
}

// TestEveryKeyHasAClass: a key added to the schema without a class fails here, and so does a
// class left behind for a key that is gone.
func TestEveryKeyHasAClass(t *testing.T) {
	paths := schemaPaths(reflect.TypeFor[Config](), "")
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			c, ok := classes[p]
			if !ok {
				t.Fatalf("%s has no class: add it to classes in changes.go (live, next pass or restart)", p)
			}
			if c != Live && c != NextPass && c != Restart {
				t.Fatalf("%s has class %q", p, c)
			}
		})
	}
	for p := range classes {
		if p != "target" && p != "account" && !slices.Contains(paths, p) {
			t.Errorf("classes has %s, which is not a key of Config", p)
		}
	}
	if len(paths) < 40 {
		t.Fatalf("walked only %d keys: the walk is broken", len(paths))
	}
}

// TestClasses pins the classes the operator relies on (docs/configuration.md lists them all).
func TestClasses(t *testing.T) {
	for _, tc := range []struct {
		path string
		want Class
	}{
		{"daemon.log_level", Live}, {"daemon.log_format", Live}, {"daemon.state_dir", Restart},
		{"daemon.metrics_listen", Restart}, {"daemon.status_listen", Restart}, {"daemon.max_runners", NextPass},
		{"webhook.listen", Restart}, {"fleet.name", Restart}, {"github.token_file", Live},
		{"target.max_runners", NextPass}, {"target.labels", NextPass}, {"target.enabled", Live},
		{"target.repository", Live}, {"target", Live}, {"no.such.key", Restart},
	} {
		if got := ClassOf(tc.path); got != tc.want {
			t.Errorf("ClassOf(%s) = %s, want %s", tc.path, got, tc.want)
		}
	}
}

func TestDiff(t *testing.T) {
	base := func() *Config {
		return &Config{
			Daemon: Daemon{StateDir: "/var/lib/rm", LogLevel: "info", MaxRunners: 4, PollInterval: Duration(30 * time.Second)},
			GitHub: GitHub{APIURL: DefaultAPIURL, TokenFile: "/etc/rm/token"},
			Targets: []Target{
				{Name: "api", Repository: "acme/api", MaxRunners: 2, Env: map[string]string{"K": "s3cret"}},
				{Name: "web", Repository: "acme/web", MaxRunners: 1},
			},
		}
	}
	on, off := true, false
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"identical", func(*Config) {}, nil},
		{"log level", func(c *Config) { c.Daemon.LogLevel = "debug" }, []string{`daemon.log_level: "info" -> "debug" (live)`}},
		{"state dir", func(c *Config) { c.Daemon.StateDir = "/srv" }, []string{`daemon.state_dir: "/var/lib/rm" -> "/srv" (restart)`}},
		{"host max", func(c *Config) { c.Daemon.MaxRunners = 8 }, []string{`daemon.max_runners: 4 -> 8 (next pass)`}},
		{"poll interval", func(c *Config) { c.Daemon.PollInterval = Duration(time.Minute) }, []string{`daemon.poll_interval: 30s -> 1m0s (next pass)`}},
		{"webhook added", func(c *Config) { c.Webhook = &Webhook{Listen: ":8080", Path: "/webhook"} }, []string{
			`webhook.listen: "" -> ":8080" (restart)`, `webhook.path: "" -> "/webhook" (restart)`}},
		{"device flow added, token removed", func(c *Config) { c.GitHub.TokenFile = ""; c.GitHub.DeviceFlow = &DeviceFlow{ClientID: "Iv1"} }, []string{
			`github.token_file: "/etc/rm/token" -> "" (live)`, `github.device_flow.client_id: "" -> "Iv1" (live)`}},
		{"target added", func(c *Config) { c.Targets = append(c.Targets, Target{Name: "ops", Organization: "acme"}) }, []string{`target "ops": absent -> added (live)`}},
		{"target removed", func(c *Config) { c.Targets = c.Targets[:1] }, []string{`target "web": present -> removed (live)`}},
		{"target reordered", func(c *Config) { c.Targets[0], c.Targets[1] = c.Targets[1], c.Targets[0] }, nil},
		{"target max_runners", func(c *Config) { c.Targets[1].MaxRunners = 3 }, []string{`target "web": max_runners: 1 -> 3 (next pass)`}},
		{"labels nil vs empty", func(c *Config) { c.Targets[1].Labels = []string{} }, nil},
		{"labels", func(c *Config) { c.Targets[1].Labels = []string{"gpu"} }, []string{`target "web": labels: [] -> ["gpu"] (next pass)`}},
		{"enabled absent vs true", func(c *Config) { c.Targets[1].Enabled = &on }, nil},
		{"disabled", func(c *Config) { c.Targets[1].Enabled = &off }, []string{`target "web": enabled: true -> false (live)`}},
		{"re-pointed", func(c *Config) { c.Targets[1].Repository = "acme/www" }, []string{`target "web": repository: "acme/web" -> "acme/www" (live)`}},
		{"env value never shown", func(c *Config) { c.Targets[0].Env = map[string]string{"K": "other"} }, []string{
			`target "api": env: {K=<redacted>} -> {K=<redacted>} (values changed) (next pass)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := base()
			tc.edit(cur)
			var got []string
			for _, c := range Diff(base(), cur) {
				got = append(got, c.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Diff:\n got %q\nwant %q", got, tc.want)
			}
			for _, line := range got {
				if strings.Contains(line, "s3cret") || strings.Contains(line, "other") {
					t.Fatalf("a secret value reached the diff: %s", line)
				}
			}
		})
	}
	first := Diff(nil, base())
	var added []string
	for _, c := range first {
		if c.Target != "" {
			added = append(added, c.Target)
		}
	}
	sort.Strings(added)
	if !slices.Equal(added, []string{"api", "web"}) {
		t.Errorf("Diff(nil, cfg) targets = %q, want every target added", added)
	}
}

const configDoc = "../docs/configuration.md"

// classesSection is the part of docs/configuration.md that lists every key by class, generated
// from classes so the guide cannot drift from what the daemon does.
func classesSection() string {
	var b strings.Builder
	b.WriteString("<!-- generated from config/changes.go by go test ./config -run TestDocListsEveryClass -update -->\n")
	for _, c := range []struct {
		class Class
		what  string
	}{
		{Live, "**live**: takes effect when the reload is applied"},
		{NextPass, "**next pass**: read by each target's loop at its next pass (the loops the change concerns are woken at once)"},
		{Restart, "**restart**: needs a daemon restart; a reload that changes one is rejected whole, naming the key, and the last good config keeps running"},
	} {
		var keys []string
		for p, k := range classes {
			if k == c.class {
				keys = append(keys, "`"+p+"`")
			}
		}
		sort.Strings(keys)
		b.WriteString("- " + c.what + ": " + strings.Join(keys, ", ") + ".\n")
	}
	b.WriteString("<!-- end of generated list -->\n")
	return b.String()
}

func TestDocListsEveryClass(t *testing.T) {
	doc, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "<!-- generated from config/changes.go")
	end := strings.Index(text, "<!-- end of generated list -->\n")
	if start < 0 || end < start {
		t.Fatalf("%s has no generated list of key classes", configDoc)
	}
	end += len("<!-- end of generated list -->\n")
	want := classesSection()
	if *update {
		if err := os.WriteFile(configDoc, []byte(text[:start]+want+text[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if text[start:end] != want {
		t.Fatalf("the list of key classes in %s is stale: run go test ./config -run TestDocListsEveryClass -update", configDoc)
	}
}
