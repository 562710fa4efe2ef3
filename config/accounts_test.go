package config

import (
	"strings"
	"testing"
)

// account is an [[account]] called name with a token file, plus keys.
func account(name, keys string) string {
	return "[[account]]\nname = \"" + name + "\"\ntoken_file = \"token\"\n" + keys
}

// TestAccountRules: one row per rule of [[account]], a target's account and enterprise targets
// (the format of TestRules).
func TestAccountRules(t *testing.T) {
	const hook = "[webhook]\nlisten = \"127.0.0.1:8080\"\nsecret_file = \"secret\"\n"
	for _, tc := range []struct{ name, body, want string }{
		{"account ok", auth + account("ci", "api_url = \"https://ghe.example.com/api/v3\"\npoints_per_minute = 300\n") + "[[target]]\nname = \"a\"\nrepository = \"o/a\"\naccount = \"ci\"\n", ""},
		{"account without name", auth + "[[account]]\ntoken_file = \"token\"\n", `3:3: account #1: name is required`},
		{"account named default", auth + account("default", ""), `4:1: account name "default" is the [github] section's`},
		{"account name syntax", auth + account("c i", ""), `4:1: account name must be 1-64 letters`},
		{"account names unique", auth + account("ci", "") + account("ci", ""), `7:1: account name "ci" is already used by account #1`},
		{"account without credential", auth + "[[account]]\nname = \"ci\"\n", `3:3: account "ci": no GitHub credential configured: set token_file, the GitHub App keys (app_id or app_client_id, installation_id, private_key_file), or [account.device_flow] client_id`},
		{"account with two credentials", auth + account("ci", "app_id = 1\nprivate_key_file = \"key.pem\"\n"), `3:3: account "ci": configure exactly one credential`},
		{"account token world-readable", auth + "[[account]]\nname = \"ci\"\ntoken_file = \"open-token\"\n", `5:1: account.0.token_file "open-token" is readable by every user`},
		{"account api_url", auth + account("ci", "api_url = \"ghe\"\n"), `6:1: account "ci": api_url must be an http(s) URL`},
		{"account api_url without API path", auth + account("ci", "api_url = \"https://ghe.example.com\"\n"), `6:1: warning: account "ci": api_url "https://ghe.example.com" has no API path`},
		{"account points_per_minute", auth + account("ci", "points_per_minute = 901\n"), `6:1: account "ci": points_per_minute is too large`},
		{"account app without key", auth + "[[account]]\nname = \"ci\"\napp_id = 7\n", `3:3: account "ci": private_key_file is required with a GitHub App`},
		{"unknown account key", auth + account("ci", "tokenfile = \"x\"\n"), `6:1: unknown key "account.0.tokenfile"`},
		{"target names an unknown account", target("account = \"ops\"\n") + account("ci", ""),
			`6:1: target "api": account "ops" is not an account of this file (known: default, ci, where "default" is [github]); add an [[account]] with that name`},
		{"target names default", target("account = \"default\"\n"), ""},
		{"only accounts, no [github] credential", account("ci", "") + "[[target]]\nname = \"a\"\nrepository = \"o/a\"\naccount = \"ci\"\n", ""},
		{"a target without account needs [github]", account("ci", "") + "[[target]]\nname = \"a\"\nrepository = \"o/a\"\n", `1:1: no GitHub credential configured`},
		// enterprise targets
		{"enterprise with a scale set", auth + "[[target]]\nname = \"e\"\nenterprise = \"acme\"\nscale_set = \"linux\"\nrunner_group = \"ci\"\n", ""},
		{"enterprise with webhooks", auth + hook + "[[target]]\nname = \"e\"\nenterprise = \"acme\"\nlabels = [\"linux\"]\n", ""},
		{"enterprise polled", auth + "[[target]]\nname = \"e\"\nenterprise = \"acme\"\n", `5:1: target "e": an enterprise target cannot poll: GitHub's REST API has no enterprise-wide list of queued jobs. Set scale_set = "<name>"`},
		{"enterprise and organization", auth + hook + "[[target]]\nname = \"e\"\nenterprise = \"acme\"\norganization = \"acme\"\n", `target "e": set one of repository, organization and enterprise, not several`},
		{"enterprise with an App", "[github]\napp_id = 1\nprivate_key_file = \"key.pem\"\n" + hook + "[[target]]\nname = \"e\"\nenterprise = \"acme\"\n", `target "e": GitHub Apps cannot manage enterprise runners`},
		{"enterprise slug", auth + hook + "[[target]]\nname = \"e\"\nenterprise = \"-acme\"\n", `target "e": enterprise "-acme" is not a GitHub enterprise slug`},
	} {
		t.Run(tc.name, func(t *testing.T) { wantOne(t, problemsOf(loadIn(t, "c.toml", tc.body)), tc.want) })
	}
}

// TestAccountOf: a target without account (or with "default") is served by [github], one naming
// an [[account]] by it, relative credential paths resolved against the file like [github]'s.
func TestAccountOf(t *testing.T) {
	cfg, err := loadIn(t, "c.toml", "[github]\ntoken_file = \"token\"\n"+account("ci", "")+
		"[[target]]\nname = \"a\"\nrepository = \"o/a\"\n[[target]]\nname = \"b\"\nrepository = \"o/b\"\naccount = \"ci\"\n")
	if err != nil {
		t.Fatal(err)
	}
	name, g, ok := cfg.AccountOf(cfg.Targets[0])
	if name != DefaultAccount || !ok || g != cfg.GitHub {
		t.Fatalf("target a: %s %+v %v, want [github]", name, g, ok)
	}
	name, g, ok = cfg.AccountOf(cfg.Targets[1])
	if name != "ci" || !ok || g.APIURL != DefaultAPIURL || !strings.HasSuffix(g.TokenFile, "/token") || g.TokenFile == "token" {
		t.Fatalf("target b: %s %+v %v, want account ci with the default api_url and an absolute token path", name, g, ok)
	}
	if got := cfg.AccountNames(); strings.Join(got, ",") != "default,ci" {
		t.Fatalf("AccountNames = %q", got)
	}
	if _, ok := cfg.GitHubOf("nope"); ok {
		t.Fatal("GitHubOf(nope) found an account")
	}
}

// TestAccountDiff: accounts are matched by name; api_url is a restart (the account's identity),
// a credential change is live, an added account is live.
func TestAccountDiff(t *testing.T) {
	old := &Config{Accounts: []Account{{Name: "ci", GitHub: GitHub{APIURL: DefaultAPIURL, TokenFile: "/a"}}}}
	cur := &Config{Accounts: []Account{
		{Name: "ci", GitHub: GitHub{APIURL: "https://ghe.example.com/api/v3", TokenFile: "/b"}},
		{Name: "ops", GitHub: GitHub{APIURL: DefaultAPIURL, TokenFile: "/c"}},
	}}
	var got []string
	for _, c := range Diff(old, cur) {
		got = append(got, c.String()+" @"+c.Path())
	}
	want := []string{
		`account "ci": api_url: "https://api.github.com" -> "https://ghe.example.com/api/v3" (restart) @account.api_url`,
		`account "ci": token_file: "/a" -> "/b" (live) @account.token_file`,
		`account "ops": absent -> added (live) @account`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if keys := Diff(old, cur).Of(Restart).Keys(); keys != `account "ci" api_url` {
		t.Fatalf("restart keys %q", keys)
	}
}

// TestIdentity: a target's account and enterprise are part of its identity; a target of
// [github] keeps the identity it had before accounts existed (journals and fleets key on it).
func TestIdentity(t *testing.T) {
	for _, tc := range []struct {
		t    Target
		want string
	}{
		{Target{Repository: "o/r"}, "repo:o/r"},
		{Target{Organization: "o", ScaleSet: "s"}, "org:o/scale_set:s"},
		{Target{Enterprise: "acme"}, "enterprise:acme"},
		{Target{Enterprise: "acme", Account: "ci", ScaleSet: "s"}, "account:ci/enterprise:acme/scale_set:s"},
	} {
		if got := tc.t.Identity(); got != tc.want {
			t.Errorf("%+v: Identity %q, want %q", tc.t, got, tc.want)
		}
	}
}

// TestForAccount: a per-account copy holds that account's section and targets only.
func TestForAccount(t *testing.T) {
	cfg := &Config{GitHub: GitHub{TokenFile: "/a"}, Accounts: []Account{{Name: "ci", GitHub: GitHub{TokenFile: "/b", PointsPerMinute: 100}}},
		Targets: []Target{{Name: "x", Repository: "o/x"}, {Name: "y", Repository: "o/y", Account: "ci"}, {Name: "z", Repository: "o/z", Account: "ci", Enabled: new(bool)}}}
	if got := cfg.UsedAccounts(); strings.Join(got, ",") != "default,ci" {
		t.Fatalf("UsedAccounts = %q", got)
	}
	ci := cfg.ForAccount("ci")
	if ci.GitHub.TokenFile != "/b" || ci.GitHub.PointsPerMinute != 100 || len(ci.Accounts) != 0 || len(ci.Targets) != 2 || ci.Targets[0].Name != "y" || ci.Targets[0].Account != "" {
		t.Fatalf("ForAccount(ci) = %+v", ci)
	}
	if def := cfg.ForAccount(DefaultAccount); def.GitHub.TokenFile != "/a" || len(def.Targets) != 1 || def.Targets[0].Name != "x" {
		t.Fatalf("ForAccount(default) = %+v", def)
	}
	if len(cfg.Targets) != 3 || cfg.Targets[1].Account != "ci" {
		t.Fatal("ForAccount changed the config it copied")
	}
}

// TestAccountRedacted: config print hides userinfo in an account's api_url as in [github]'s, and
// its copy shares nothing with the config.
func TestAccountRedacted(t *testing.T) {
	cfg := &Config{Accounts: []Account{{Name: "ghes", GitHub: GitHub{APIURL: "https://user:secret@ghes.example.com/api/v3", DeviceFlow: &DeviceFlow{ClientID: "x"}}}}}
	r := cfg.Redacted()
	if strings.Contains(r.Accounts[0].APIURL, "secret") {
		t.Fatalf("account api_url printed with its password: %s", r.Accounts[0].APIURL)
	}
	r.Accounts[0].DeviceFlow.ClientID = "changed"
	if cfg.Accounts[0].DeviceFlow.ClientID != "x" || !strings.Contains(cfg.Accounts[0].APIURL, "secret") {
		t.Fatal("Redacted changed the config it copied")
	}
}
