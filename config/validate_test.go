package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const auth = "[github.device_flow]\nclient_id = \"Iv1.x\"\n"

// target wraps target keys in a valid [[target]] with a device-flow credential.
func target(keys string) string {
	return auth + "[[target]]\nname = \"api\"\nrepository = \"acme/api\"\n" + keys
}

// fleet is a valid [fleet] section on loopback plus keys.
func fleet(keys string) string {
	return "[fleet]\netcd_endpoints = [\"http://127.0.0.1:2379\"]\nname = \"ci\"\nhost_name = \"h1\"\n" + keys
}

// loadIn writes body as dir/c.toml (plus any extra files) and loads it with an empty environment.
func loadIn(t *testing.T, name, body string, env ...string) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []struct {
		name string
		mode os.FileMode
	}{{"token", 0o600}, {"key.pem", 0o600}, {"open-token", 0o644}, {"group-token", 0o640}, {"secret", 0o600},
		{"group-writable-token", 0o620}, {"world-writable-token", 0o602}, {"status-token", 0o600}} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte("x"), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return LoadWith(path, Options{Environ: func() []string { return env }})
}

// problemsOf returns every problem of a load (errors of a rejected file, or warnings), as text.
func problemsOf(cfg *Config, err error) []string {
	var ps []Problem
	var ce *Error
	switch {
	case errors.As(err, &ce):
		ps = ce.Problems
	case err != nil:
		return []string{"UNREADABLE " + err.Error()}
	default:
		ps = cfg.Warnings
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = strings.TrimPrefix(p.String(), p.File+":")
	}
	return out
}

// TestRules has one row per validation rule: the file, and the one problem it must produce
// ("" = valid without warnings). Positions are part of the expectation.
func TestRules(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"minimal valid", auth, ""},
		{"sections only, no targets, no credential", "[daemon]\n", ""},
		{"empty file", "", `1:1: the file holds no settings (it is empty, or only whitespace and comments)`},
		{"whitespace only", "\n  \n\t\n", `1:1: the file holds no settings`},
		{"comments only", "# [daemon]\n# max_runners = 4\n", `1:1: the file holds no settings`},
		{"BOM then settings", "\xef\xbb\xbf" + auth, ""},
		{"BOM then a bad key, positioned after the BOM", "\xef\xbb\xbfcolour = 1\n" + auth, `1:1: unknown key "colour"`},
		{"full valid target", target("labels = [\"linux\", \"x64\"]\nmax_runners = 3\nmin_idle = 1\nidle_timeout = \"10m\"\nmode = \"monitor\"\nrunner_version = \"2.321.0\"\nwork_dir = \"/srv/w\"\nephemeral = true\nenabled = true\n[target.env]\nA_B = \"1\"\n"), ""},
		// shape
		{"unknown top-level key", "colour = 1\n" + auth, `1:1: unknown key "colour"`},
		{"unknown daemon key with suggestion", auth + "[daemon]\nmax_runner = 1\n", `4:1: unknown key "daemon.max_runner" (did you mean "max_runners"?)`},
		{"unknown target key", target("max_runner = 3\n"), `6:1: target "api": unknown key "max_runner" (did you mean "max_runners"?)`},
		{"wrong type int", auth + "[daemon]\nmax_runners = \"four\"\n", `4:1: daemon.max_runners must be a whole number (got string "four")`},
		{"wrong type float", auth + "[daemon]\nmax_runners = 1.5\n", `4:1: daemon.max_runners must be a whole number (got number 1.5)`},
		{"wrong type bool", target("enabled = \"yes\"\n"), `6:1: target "api": enabled must be true or false (got string "yes")`},
		{"wrong type list", target("labels = \"linux\"\n"), `6:1: target "api": labels must be a list (got string "linux")`},
		{"wrong type label element", target("labels = [\"a\", 2]\n"), `6:16: target "api": labels.1 must be a string (got integer 2)`},
		{"target not an array of tables", auth + "[target]\nname = \"x\"\n", `3:2: target must be a list of tables`},
		{"env value not echoed", target("env = { A = 12345 }\n"), `6:9: target "api": env.A must be a string (got an integer)`},
		{"env bad name", target("[target.env]\n\"A-B\" = \"v\"\n"), `7:1: target "api": env: "A-B" is not a valid environment variable name`},
		{"duration not a string", auth + "[daemon]\npoll_interval = 30\n", `4:1: daemon.poll_interval must be a duration string such as "30s" (got integer 30)`},
		{"bad duration", auth + "[daemon]\npoll_interval = \"30 seconds\"\n", `4:1: daemon.poll_interval: "30 seconds" is not a duration`},
		{"date value", auth + "[daemon]\nstate_dir = 2026-01-01\n", `4:1: daemon.state_dir must be a string (got a date/time)`},
		// daemon
		{"state_dir relative", auth + "[daemon]\nstate_dir = \"var\"\n", `4:1: daemon.state_dir must be an absolute path (got "var")`},
		{"log_level", auth + "[daemon]\nlog_level = \"loud\"\n", `4:1: daemon.log_level must be one of debug, info, warn, error (got "loud")`},
		{"log_format", auth + "[daemon]\nlog_format = \"xml\"\n", `4:1: daemon.log_format must be one of auto, text, json (got "xml")`},
		{"daemon max_runners", auth + "[daemon]\nmax_runners = 0\n", `4:1: daemon.max_runners must be at least 1 (got 0)`},
		{"poll_interval too short", auth + "[daemon]\npoll_interval = \"10ms\"\n", `4:1: daemon.poll_interval must be at least 1s (got 10ms)`},
		{"idle_poll_interval", auth + "[daemon]\npoll_interval = \"30s\"\nidle_poll_interval = \"30s\"\n", ""},
		{"idle_poll_interval below poll_interval", auth + "[daemon]\npoll_interval = \"1m\"\nidle_poll_interval = \"30s\"\n",
			`5:1: daemon.idle_poll_interval (30s) must be at least daemon.poll_interval (1m0s): an idle repository is read less often than a busy one, never more; raise it, or remove it for 4 x poll_interval`},
		{"idle_poll_interval past bound", auth + "[daemon]\nidle_poll_interval = \"721h\"\n", `4:1: daemon.idle_poll_interval is too large: at most 720h`},
		{"drain negative", auth + "[daemon]\nshutdown_drain_timeout = \"-1s\"\n", `4:1: daemon.shutdown_drain_timeout must not be negative (got -1s)`},
		{"metrics_listen", auth + "[daemon]\nmetrics_listen = \"9090\"\n", `4:1: daemon.metrics_listen must be host:port`},
		{"status_listen port range", auth + "[daemon]\nstatus_listen = \":70000\"\n", `4:1: daemon.status_listen must be host:port`},
		{"status_listen unix ok", auth + "[daemon]\nstatus_listen = \"unix\"\n", ""},
		{"status_listen loopback without token", auth + "[daemon]\nstatus_listen = \"127.0.0.1:8081\"\n", `4:1: warning: daemon.status_listen "127.0.0.1:8081" has no daemon.status_token_file: every job runs as a local user and can reach loopback`},
		{"status_listen loopback with token ok", auth + "[daemon]\nstatus_listen = \"127.0.0.1:8081\"\nstatus_token_file = \"status-token\"\n", ""},
		{"status_listen all interfaces without token", auth + "[daemon]\nstatus_listen = \"0.0.0.0:8081\"\n", `4:1: daemon.status_listen "0.0.0.0:8081" is reachable from other hosts and would answer anyone: set daemon.status_token_file`},
		{"status_listen empty host without token", auth + "[daemon]\nstatus_listen = \":8081\"\n", `4:1: daemon.status_listen ":8081" is reachable from other hosts`},
		{"status_listen remote with token ok", auth + "[daemon]\nstatus_listen = \"0.0.0.0:8081\"\nstatus_token_file = \"status-token\"\n", ""},
		{"status token world-readable", auth + "[daemon]\nstatus_listen = \"0.0.0.0:8081\"\nstatus_token_file = \"open-token\"\n", `5:1: daemon.status_token_file "open-token" is readable by every user`},
		{"over-committed host warns", auth + "[daemon]\nmax_runners = 1\n[[target]]\nname = \"a\"\nrepository = \"o/a\"\n[[target]]\nname = \"b\"\nrepository = \"o/b\"\n", `4:1: warning: enabled targets allow 2 runners together but daemon.max_runners is 1`},
		{"disabled targets do not count", auth + "[daemon]\nmax_runners = 1\n[[target]]\nname = \"a\"\nrepository = \"o/a\"\n[[target]]\nname = \"b\"\nrepository = \"o/b\"\nenabled = false\n", ""},
		// github
		{"api_url not a url", auth + "[github]\napi_url = \"api.github.com\"\n", `4:1: github.api_url must be an http(s) URL`},
		{"api_url plain http remote warns", "[github]\napi_url = \"http://ghe.example.com/api/v3\"\n" + auth, `2:1: warning: github.api_url uses plain http to a remote host`},
		{"api_url plain http loopback", "[github]\napi_url = \"http://127.0.0.1:8787\"\n" + auth, ""},
		{"no credential with targets", "[[target]]\nname = \"a\"\nrepository = \"o/a\"\n", `1:1: no GitHub credential configured`},
		{"two credentials", "[github]\ntoken_file = \"token\"\napp_id = 1\n", `1:2: configure exactly one credential, found github.token_file and the GitHub App keys`},
		{"token file ok", "[github]\ntoken_file = \"token\"\n", ""},
		{"token file missing", "[github]\ntoken_file = \"nope\"\n", `2:1: github.token_file "nope" does not exist`},
		{"token file is a dir", "[github]\ntoken_file = \"adir\"\n", `2:1: github.token_file "adir" is a directory`},
		{"token file world-readable", "[github]\ntoken_file = \"open-token\"\n", `2:1: github.token_file "open-token" is readable by every user (mode 0644)`},
		{"token file group-readable warns", "[github]\ntoken_file = \"group-token\"\n", `2:1: warning: github.token_file "group-token" is readable by its group (mode 0640)`},
		{"token file group-writable", "[github]\ntoken_file = \"group-writable-token\"\n", `2:1: github.token_file "group-writable-token" is writable by its group or by every user (mode 0620)`},
		{"token file world-writable", "[github]\ntoken_file = \"world-writable-token\"\n", `2:1: github.token_file "world-writable-token" is writable by its group or by every user (mode 0602)`},
		{"app ok", "[github]\napp_id = 1\ninstallation_id = 2\nprivate_key_file = \"key.pem\"\n", ""},
		{"app without installation looks it up", "[github]\napp_id = 1\nprivate_key_file = \"key.pem\"\n", ""},
		{"app negative installation", "[github]\napp_id = 1\ninstallation_id = -3\nprivate_key_file = \"key.pem\"\n", `3:1: github.installation_id must be the App installation's positive ID, or absent to look it up per owner (got -3)`},
		{"app negative id", "[github]\napp_id = -1\ninstallation_id = 2\nprivate_key_file = \"key.pem\"\n", `2:1: github.app_id must be the GitHub App's positive ID (got -1)`},
		{"app without key", "[github]\napp_id = 1\ninstallation_id = 2\n", `1:2: github.private_key_file is required with a GitHub App`},
		{"app client id ok", "[github]\napp_client_id = \"Iv23liAbCdEf0123456789\"\ninstallation_id = 2\nprivate_key_file = \"key.pem\"\n", ""},
		{"app old client id ok", "[github]\napp_client_id = \"Iv1.0123456789abcdef\"\nprivate_key_file = \"key.pem\"\n", ""},
		{"app id and client id", "[github]\napp_id = 1\napp_client_id = \"Iv23liAbCdEf0123456789\"\nprivate_key_file = \"key.pem\"\n", `3:1: set github.app_id or github.app_client_id, not both`},
		{"app client id numeric", "[github]\napp_client_id = \"12345\"\nprivate_key_file = \"key.pem\"\n", `2:1: github.app_client_id "12345" is not a GitHub App client ID`},
		{"app client id of an OAuth app", "[github]\napp_client_id = \"Ov23liAbCdEf0123456789\"\nprivate_key_file = \"key.pem\"\n", `2:1: github.app_client_id "Ov23liAbCdEf0123456789" is not a GitHub App client ID`},
		{"app client id without key", "[github]\napp_client_id = \"Iv23liAbCdEf0123456789\"\n", `1:2: github.private_key_file is required with a GitHub App`},
		{"app without id or client id", "[github]\ninstallation_id = 2\nprivate_key_file = \"key.pem\"\n", `github.app_id must be the GitHub App's positive ID (got 0), or set github.app_client_id instead`},
		{"app key missing", "[github]\napp_id = 1\ninstallation_id = 2\nprivate_key_file = \"gone.pem\"\n", `4:1: github.private_key_file "gone.pem" does not exist`},
		{"device flow without client", "[github.device_flow]\nclient_id = \"\"\n", `2:1: github.device_flow.client_id is required`},
		// webhook
		{"webhook ok", auth + "[webhook]\nlisten = \"127.0.0.1:8080\"\nsecret_file = \"secret\"\n", ""},
		{"webhook bad listen", auth + "[webhook]\nlisten = \"localhost\"\nsecret_file = \"secret\"\n", `4:1: webhook.listen must be host:port`},
		{"webhook no listen", auth + "[webhook]\nsecret_file = \"secret\"\n", `3:2: webhook.listen is required`},
		{"webhook path", auth + "[webhook]\nlisten = \":8080\"\npath = \"hook\"\nsecret_file = \"secret\"\n", `5:1: webhook.path must start with / (got "hook")`},
		{"webhook poll_interval negative", auth + "[webhook]\nlisten = \":8080\"\nsecret_file = \"secret\"\npoll_interval = \"-1s\"\n", `6:1: webhook.poll_interval must not be negative (got -1s)`},
		{"webhook no secret", auth + "[webhook]\nlisten = \":8080\"\n", `3:2: webhook.secret_file is required`},
		{"webhook secret world-readable", auth + "[webhook]\nlisten = \":8080\"\nsecret_file = \"open-token\"\n", `5:1: webhook.secret_file "open-token" is readable by every user`},
		// fleet
		{"fleet ok", auth + fleet(""), ""},
		{"fleet tls ok", auth + "[fleet]\netcd_endpoints = [\"https://etcd:2379\"]\nname = \"ci\"\nhost_name = \"h1\"\netcd_ca_file = \"open-token\"\netcd_cert_file = \"open-token\"\netcd_key_file = \"key.pem\"\n", ""},
		{"fleet no endpoints", auth + "[fleet]\nname = \"ci\"\nhost_name = \"h1\"\n", `3:2: fleet.etcd_endpoints is required`},
		{"fleet endpoint not a url", auth + "[fleet]\netcd_endpoints = [\"etcd:2379\"]\nname = \"ci\"\nhost_name = \"h1\"\n", `4:19: fleet.etcd_endpoints: "etcd:2379" must be an http(s) URL`},
		{"fleet plain http remote warns", auth + "[fleet]\netcd_endpoints = [\"http://etcd:2379\"]\nname = \"ci\"\nhost_name = \"h1\"\n", `4:19: warning: fleet.etcd_endpoints: "http://etcd:2379" is plain http to a remote host`},
		{"fleet cert without key", auth + "[fleet]\netcd_endpoints = [\"https://etcd:2379\"]\nname = \"ci\"\nhost_name = \"h1\"\netcd_cert_file = \"open-token\"\n", `fleet.etcd_cert_file and fleet.etcd_key_file go together`},
		{"fleet key world-readable", auth + "[fleet]\netcd_endpoints = [\"https://etcd:2379\"]\nname = \"ci\"\nhost_name = \"h1\"\netcd_cert_file = \"token\"\netcd_key_file = \"open-token\"\n", `fleet.etcd_key_file "open-token" is readable by every user`},
		{"fleet ca missing", auth + "[fleet]\netcd_endpoints = [\"https://etcd:2379\"]\nname = \"ci\"\nhost_name = \"h1\"\netcd_ca_file = \"ca.pem\"\n", `fleet.etcd_ca_file "ca.pem" does not exist`},
		{"fleet tls files without https warn", auth + fleet("etcd_ca_file = \"token\"\n"), `warning: fleet: TLS files are set but no endpoint is https`},
		{"fleet no name", auth + "[fleet]\netcd_endpoints = [\"http://127.0.0.1:2379\"]\nhost_name = \"h1\"\n", `3:2: fleet.name is required`},
		{"fleet host_name syntax", auth + "[fleet]\netcd_endpoints = [\"http://127.0.0.1:2379\"]\nname = \"ci\"\nhost_name = \"h/1\"\n", `6:1: fleet.host_name must be 1-64 letters`},
		{"fleet lease_ttl too short", auth + fleet("lease_ttl = \"1s\"\n"), `fleet.lease_ttl must be whole seconds, at least 2s`},
		{"fleet lease_ttl fraction", auth + fleet("lease_ttl = \"2500ms\"\n"), `fleet.lease_ttl must be whole seconds, at least 2s: etcd leases count in seconds (got 2.5s)`},
		// targets
		{"name missing", auth + "[[target]]\nrepository = \"o/a\"\n", `3:3: target #1: name is required`},
		{"name syntax", auth + "[[target]]\nname = \"a b\"\nrepository = \"o/a\"\n", `4:1: target "a b": name must be 1-64 letters`},
		{"duplicate names", auth + "[[target]]\nname = \"a\"\nrepository = \"o/a\"\n[[target]]\nname = \"a\"\nrepository = \"o/b\"\n", `7:1: target "a": name is already used by target #1 (line 3)`},
		{"neither repository nor organization", auth + "[[target]]\nname = \"a\"\n", `3:3: target "a": one of repository = "owner/repo", organization = "org" or enterprise = "slug" is required`},
		{"both repository and organization", target("organization = \"acme\"\n"), `6:1: target "api": set either repository or organization, not both`},
		{"repository without slash", auth + "[[target]]\nname = \"a\"\nrepository = \"acme\"\n", `5:1: target "a": repository must be "owner/repo" (got "acme")`},
		{"repository two slashes", auth + "[[target]]\nname = \"a\"\nrepository = \"a/b/c\"\n", `repository must be "owner/repo"`},
		{"repository dotdot", auth + "[[target]]\nname = \"a\"\nrepository = \"acme/..\"\n", `5:1: target "a": repository "acme/..": ".." is not a repository name`},
		{"repository bad char", auth + "[[target]]\nname = \"a\"\nrepository = \"acme/a+b\"\n", `repository "acme/a+b": name must be 1-100 letters`},
		{"repository too long", auth + "[[target]]\nname = \"a\"\nrepository = \"acme/" + strings.Repeat("r", 101) + "\"\n", `name must be 1-100 letters`},
		{"repository dots ok", auth + "[[target]]\nname = \"a\"\nrepository = \"acme/.github\"\n", ""},
		{"owner double hyphen", auth + "[[target]]\nname = \"a\"\nrepository = \"ac--me/x\"\n", `owner "ac--me" is not a GitHub login`},
		{"owner too long", auth + "[[target]]\nname = \"a\"\norganization = \"" + strings.Repeat("o", 40) + "\"\n", `is not a GitHub login: 1-39`},
		{"organization trailing hyphen", auth + "[[target]]\nname = \"a\"\norganization = \"acme-\"\n", `5:1: target "a": organization "acme-" is not a GitHub login`},
		{"runner_group on repository", target("runner_group = \"g\"\n"), `6:1: target "api": runner_group applies to organization targets only`},
		{"label comma", target("labels = [\"gpu,cuda\"]\n"), `6:11: target "api": label "gpu,cuda" must not contain commas`},
		{"label empty", target("labels = [\"\"]\n"), `6:11: target "api": label "" must be 1-100 characters`},
		{"label too long", target("labels = [\"" + strings.Repeat("l", 101) + "\"]\n"), `must be 1-100 characters`},
		{"label duplicate warns", target("labels = [\"gpu\", \"GPU\"]\n"), `6:18: warning: target "api": label "GPU" is listed twice`},
		{"scale_set alone", target("scale_set = \"linux\"\ndelete_scale_set_on_remove = true\n"), ""},
		{"scale_set with its own name as label", target("scale_set = \"linux\"\nlabels = [\"linux\"]\n"), ""},
		{"scale_set with other labels", target("scale_set = \"linux\"\nlabels = [\"linux\", \"x64\"]\n"), ""},
		{"scale_set with labels beside its name", target("scale_set = \"gpu-set\"\nlabels = [\"gpu\", \"Linux\"]\n"), ""},
		{"scale_set with self-hosted", target("scale_set = \"linux\"\nlabels = [\"x64\", \"Self-Hosted\"]\n"), `7:18: target "api": a scale set does not carry the label self-hosted`},
		{"scale_set with a comma", target("scale_set = \"a,b\"\n"), `6:1: target "api": scale_set "a,b" must not contain commas`},
		{"scale_set too long", target("scale_set = \"" + strings.Repeat("s", 101) + "\"\n"), `scale_set must be 1-100 characters`},
		{"delete_scale_set_on_remove without scale_set", target("delete_scale_set_on_remove = true\n"), `6:1: target "api": delete_scale_set_on_remove applies to scale-set targets only`},
		{"target max_runners", target("max_runners = 0\n"), `6:1: target "api": max_runners must be at least 1 (got 0)`},
		{"min_idle negative", target("min_idle = -1\n"), `6:1: target "api": min_idle must not be negative (got -1)`},
		{"min_idle over max", target("max_runners = 2\nmin_idle = 3\n"), `7:1: target "api": min_idle (3) must not exceed max_runners (2)`},
		{"idle_timeout negative", target("idle_timeout = \"-5m\"\n"), `6:1: target "api": idle_timeout must not be negative (got -5m0s)`},
		{"target poll_interval", target("poll_interval = \"1ms\"\n"), `6:1: target "api": poll_interval must be at least 1s`},
		{"target idle_poll_interval", target("poll_interval = \"1m\"\nidle_poll_interval = \"10m\"\n"), ""},
		{"target idle_poll_interval below its poll_interval", target("poll_interval = \"2m\"\nidle_poll_interval = \"1m\"\n"),
			`7:1: target "api": idle_poll_interval (1m0s) must be at least this target's poll interval (2m0s): an idle repository is read less often than a busy one, never more`},
		{"target idle_poll_interval below the daemon's poll_interval", target("idle_poll_interval = \"10s\"\n"),
			`6:1: target "api": idle_poll_interval (10s) must be at least this target's poll interval (30s)`},
		{"mode", target("mode = \"turbo\"\n"), `6:1: target "api": mode must be one of autoscale, monitor (got "turbo")`},
		{"runner_version", target("runner_version = \"v2\"\n"), `6:1: target "api": runner_version must be "latest" or an actions/runner version`},
		{"work_dir relative", target("work_dir = \"w\"\n"), `6:1: target "api": work_dir must be an absolute path`},
		{"work_dir per attempt", target("work_dir = \"/srv/work\"\n"), ""},
		{"shared_work_dir without work_dir", target("shared_work_dir = true\n"), `target "api": shared_work_dir needs work_dir`},
		{"shared_work_dir with per-slot users", target("work_dir = \"/srv/work\"\nshared_work_dir = true\n"), `7:1: target "api": shared_work_dir = true needs daemon.runner_user = "daemon"`},
		{"shared_work_dir with explicit per-slot users", "[daemon]\nrunner_user = \"per-slot\"\n" + target("work_dir = \"/srv/work\"\nshared_work_dir = true\n"), `9:1: target "api": shared_work_dir = true needs daemon.runner_user = "daemon"`},
		{"ephemeral false", target("ephemeral = false\n"), `6:1: target "api": ephemeral = false is not supported: just-in-time runners are always ephemeral`},
	} {
		t.Run(tc.name, func(t *testing.T) { wantOne(t, problemsOf(loadIn(t, "c.toml", tc.body)), tc.want) })
	}
}

// With runners as the daemon's user, a shared work dir is allowed, with the warnings of both
// choices.
func TestSharedWorkDirAsTheDaemonsUserWarns(t *testing.T) {
	got := problemsOf(loadIn(t, "c.toml", "[daemon]\nrunner_user = \"daemon\"\n"+target("work_dir = \"/srv/work\"\nshared_work_dir = true\n")))
	if len(got) != 2 || !strings.Contains(got[0], "warning: daemon.runner_user = \"daemon\"") ||
		!strings.Contains(got[1], `9:1: warning: target "api": shared_work_dir = true: every job of this target runs in work_dir`) {
		t.Fatalf("want the runner_user and shared_work_dir warnings, got %q", got)
	}
}

// wantOne fails unless got is exactly one problem containing want, or none when want is "".
func wantOne(t *testing.T, got []string, want string) {
	t.Helper()
	if want == "" {
		if len(got) != 0 {
			t.Fatalf("want valid without warnings, got %q", got)
		}
		return
	}
	if len(got) != 1 || !strings.Contains(got[0], want) {
		t.Fatalf("want exactly one problem containing %q, got %q", want, got)
	}
}

// TestFleetDefaults: lease_ttl is 10s and host_name is the machine's host name unless set; no
// [fleet] means no fleet at all (the single-host daemon of before).
func TestFleetDefaults(t *testing.T) {
	cfg, err := loadIn(t, "c.toml", auth+"[fleet]\netcd_endpoints = [\"http://127.0.0.1:2379\"]\nname = \"ci\"\n")
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if f := cfg.Fleet; f == nil || f.LeaseTTL.D() != 10*time.Second || f.HostName != host {
		t.Fatalf("fleet defaults: %+v, want lease_ttl 10s and host_name %q", cfg.Fleet, host)
	}
	if cfg, err = loadIn(t, "c.toml", auth); err != nil || cfg.Fleet != nil {
		t.Fatalf("no [fleet]: got %+v, %v", cfg.Fleet, err)
	}
}

func TestScaleSetLabels(t *testing.T) {
	for _, tc := range []struct {
		t    Target
		want []string
	}{
		{Target{Repository: "o/r"}, nil},
		{Target{ScaleSet: "gpu-set"}, []string{"gpu-set"}},
		{Target{ScaleSet: "gpu-set", Labels: []string{"GPU-SET"}}, []string{"gpu-set"}},
		{Target{ScaleSet: "gpu-set", Labels: []string{"gpu", "linux", "Gpu"}}, []string{"gpu-set", "gpu", "linux"}},
	} {
		if got := tc.t.ScaleSetLabels(); !slices.Equal(got, tc.want) {
			t.Errorf("ScaleSetLabels(%q, %v) = %v, want %v", tc.t.ScaleSet, tc.t.Labels, got, tc.want)
		}
	}
}
