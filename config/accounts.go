package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runner-manager/runner-manager/internal/redact"
)

// Accounts: [github] is the account named DefaultAccount, [[account]] entries are the others. A
// target names its account; each account has its own client and request governor in the daemon.

// AccountOf returns the GitHub section serving t: its [[account]]'s, or [github] for a target
// naming none (or DefaultAccount). ok is false for a name no [[account]] has (Validate refuses such a file).
func (c *Config) AccountOf(t Target) (name string, g GitHub, ok bool) {
	g, ok = c.GitHubOf(t.Account)
	return t.AccountName(), g, ok
}

// AccountName is the name of the account t is served under: its `account`, or DefaultAccount
// for [github]'s.
func (t Target) AccountName() string {
	if t.Account == "" {
		return DefaultAccount
	}
	return t.Account
}

// AccountNames lists DefaultAccount and every [[account]]'s name, in file order.
func (c *Config) AccountNames() []string {
	out := []string{DefaultAccount}
	for _, a := range c.Accounts {
		out = append(out, a.Name)
	}
	return out
}

// GitHubOf returns the GitHub section of the account called name ("" or DefaultAccount: [github]).
func (c *Config) GitHubOf(name string) (GitHub, bool) {
	if name == "" || name == DefaultAccount {
		return c.GitHub, true
	}
	for _, a := range c.Accounts {
		if a.Name == name {
			return a.GitHub, true
		}
	}
	return GitHub{}, false
}

// UsedAccounts names the accounts the enabled targets use, DefaultAccount first, then in file
// order.
func (c *Config) UsedAccounts() []string {
	used := map[string]bool{}
	for _, t := range c.EnabledTargets() {
		n, _, _ := c.AccountOf(t)
		used[n] = true
	}
	var out []string
	for _, n := range c.AccountNames() {
		if used[n] {
			out = append(out, n)
		}
	}
	return out
}

// ForAccount is a copy of c as if the account called name were its only one: its section in
// [github], no [[account]], and only its targets (their account key cleared). What is planned
// and checked per account (the poll plan under its ceiling, verify) reads such a copy.
func (c *Config) ForAccount(name string) *Config {
	g, _ := c.GitHubOf(name)
	out := *c
	out.GitHub, out.Accounts, out.Targets, out.byName = g, nil, nil, nil
	for _, t := range c.Targets {
		if n, _, _ := c.AccountOf(t); n == name || name == "" && n == DefaultAccount {
			t.Account = ""
			out.Targets = append(out.Targets, t)
		}
	}
	return &out
}

// AccountStateDir is where the account called name keeps its files (its device-flow sign-in) in
// stateDir: stateDir itself for [github], as before accounts existed, and
// <stateDir>/accounts/<name> for an [[account]].
func AccountStateDir(stateDir, name string) string {
	if name == "" || name == DefaultAccount {
		return stateDir
	}
	return filepath.Join(stateDir, "accounts", name)
}

// validateAccounts checks [github], every [[account]], and each target's account key.
func (c *checker) validateAccounts(cfg *Config) {
	used := map[string]bool{}
	for _, t := range cfg.Targets {
		if t.IsEnabled() {
			used[t.Account] = true
		}
	}
	cfg.GitHub.APIURL = c.validateGitHub(cfg.GitHub, "github", "github.", used[""])
	seen := map[string]int{}
	for i := range cfg.Accounts {
		a := &cfg.Accounts[i]
		p := "account." + strconv.Itoa(i)
		switch {
		case a.Name == "":
			c.add(SeverityError, p, "account #"+strconv.Itoa(i+1)+": name is required: targets refer to the account with account = \"<name>\"")
			continue
		case len(a.Name) > maxTargetLen || !targetName.MatchString(a.Name):
			c.add(SeverityError, p+".name", fmt.Sprintf("account name must be 1-%d letters, digits, '.', '_' or '-', starting with a letter or digit (got %q)", maxTargetLen, a.Name))
		case a.Name == DefaultAccount:
			c.add(SeverityError, p+".name", fmt.Sprintf("account name %q is the [github] section's: choose another name (a target without account uses [github])", DefaultAccount))
		}
		if j, dup := seen[a.Name]; dup {
			c.add(SeverityError, p+".name", fmt.Sprintf("account name %q is already used by account #%d; account names must be unique", a.Name, j+1))
		}
		seen[a.Name] = i
		a.APIURL = c.validateGitHub(a.GitHub, p, fmt.Sprintf("account %q: ", a.Name), true)
	}
	known := strings.Join(cfg.AccountNames(), ", ")
	for i, t := range cfg.Targets {
		g, ok := cfg.GitHubOf(t.Account)
		switch {
		case !ok:
			c.add(SeverityError, "target."+strconv.Itoa(i)+".account", fmt.Sprintf("account %q is not an account of this file (known: %s, where %q is [github]); add an [[account]] with that name, or remove the key to use [github]",
				t.Account, known, DefaultAccount))
		case t.Enterprise != "" && g.Auth() == AuthApp:
			// GitHub's enterprise runner endpoints take no App token (docs/github.md).
			c.add(SeverityError, "target."+strconv.Itoa(i)+".enterprise", "GitHub Apps cannot manage enterprise runners: the enterprise endpoints take a classic token (or an OAuth app's sign-in) with manage_runners:enterprise, held by an enterprise owner; give this target an [[account]] with such a token_file and set account = \"<its name>\"")
		}
	}
}

// validateGitHub checks one account's section at path sec ("github", "account.2"); label prefixes
// its keys in messages ("github.", `account "ci": `). needed says a target uses the account, so
// it must have a credential. It returns api_url normalised (the one place that happens, so the
// client, the App's token requests, the scale-set client and `config print` agree).
func (c *checker) validateGitHub(g GitHub, sec, label string, needed bool) string {
	key := func(k string) string { return sec + "." + k }
	// who starts a message about the whole section, keys names a key in one: [github]'s messages
	// read "github.token_file ...", an account's `account "ci": token_file ...`.
	who, keys := label, ""
	if sec == "github" {
		who, keys = "", label
	}
	for _, b := range []struct {
		key      string
		v, limit int
	}{{"points_per_minute", g.PointsPerMinute, GitHubPointsPerMinute}, {"max_concurrent_requests", g.MaxConcurrentRequests, GitHubConcurrent}} {
		switch {
		case b.v < 0:
			c.add(SeverityError, key(b.key), fmt.Sprintf("%s%s must be positive, or absent for the default (got %d)", label, b.key, b.v))
		case b.v > b.limit:
			c.add(SeverityError, key(b.key), tooLarge(label+b.key, fmt.Sprintf("%d, GitHub's own limit", b.limit), fmt.Sprint(b.v)))
		}
	}
	u, err := url.Parse(g.APIURL)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		c.add(SeverityError, key("api_url"), fmt.Sprintf("%sapi_url must be an http(s) URL such as %s (got %q)", label, DefaultAPIURL, redact.URL(g.APIURL)))
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		c.add(SeverityWarning, key("api_url"), label+"api_url uses plain http to a remote host: the credential would cross the network unencrypted; use https")
	}
	api := g.APIURL
	if norm, changed := enterpriseAPIURL(g.APIURL); changed {
		c.add(SeverityWarning, key("api_url"), fmt.Sprintf("%sapi_url %q has no API path; runner-manager uses %q, GitHub Enterprise Server's REST API (write that to silence this notice)",
			label, redact.URL(g.APIURL), redact.URL(norm)))
		api = norm
	}
	var kinds []string
	if g.TokenFile != "" {
		kinds = append(kinds, keys+"token_file")
	}
	if g.AppID != 0 || g.AppClientID != "" || g.InstallationID != 0 || g.PrivateKeyFile != "" {
		kinds = append(kinds, "the GitHub App keys (app_id or app_client_id, installation_id, private_key_file)")
	}
	if g.DeviceFlow != nil {
		kinds = append(kinds, "["+tableOf(sec)+".device_flow]")
	}
	switch {
	case len(kinds) > 1:
		c.add(SeverityError, sec, fmt.Sprintf("%sconfigure exactly one credential, found %s: remove all but one", who, strings.Join(kinds, " and ")))
		return api
	case len(kinds) == 0 && needed:
		c.add(SeverityError, sec, fmt.Sprintf("%sno GitHub credential configured: set %stoken_file, the GitHub App keys (app_id or app_client_id, installation_id, private_key_file), or [%s.device_flow] client_id",
			who, keys, tableOf(sec)))
		return api
	}
	switch g.Auth() {
	case AuthTokenFile:
		c.secretFile(key("token_file"), g.TokenFile)
	case AuthApp:
		c.appIdentity(g, key, label)
		// 0 (absent) is fine: the installation is then looked up per target owner.
		if g.InstallationID < 0 {
			c.add(SeverityError, key("installation_id"), fmt.Sprintf("%sinstallation_id must be the App installation's positive ID, or absent to look it up per owner (got %d)", label, g.InstallationID))
		}
		if g.PrivateKeyFile == "" {
			c.add(SeverityError, key("private_key_file"), label+"private_key_file is required with a GitHub App: the path of the App's PEM private key")
		} else {
			c.secretFile(key("private_key_file"), g.PrivateKeyFile)
		}
	case AuthDeviceFlow:
		if strings.TrimSpace(g.DeviceFlow.ClientID) == "" {
			c.add(SeverityError, key("device_flow.client_id"), label+"device_flow.client_id is required: the client ID of the OAuth or GitHub App used to sign in")
		}
	}
	return api
}

// tableOf is the table a section's path names in TOML: "github", or "account" for "account.N".
func tableOf(sec string) string {
	table, _, _ := strings.Cut(sec, ".")
	return table
}
