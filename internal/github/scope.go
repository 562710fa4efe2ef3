package github

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runner-manager/runner-manager/config"
)

// Scope is what runners are registered against: a repository (Owner+Repo), an organisation
// (Owner only) or an enterprise (Enterprise only).
type Scope struct {
	Owner      string
	Repo       string
	Enterprise string
}

// RepoScope parses "owner/name".
func RepoScope(fullName string) (Scope, error) {
	owner, repo, ok := strings.Cut(fullName, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return Scope{}, fmt.Errorf("repository %q is not of the form owner/name", fullName)
	}
	return Scope{Owner: owner, Repo: repo}, nil
}

// OrgScope is an organisation.
func OrgScope(org string) Scope { return Scope{Owner: org} }

// EnterpriseScope is an enterprise, by its slug.
func EnterpriseScope(slug string) Scope { return Scope{Enterprise: slug} }

// enterprisePrefix starts the scale-set client's scope string of an enterprise
// ("enterprises/<slug>", the path of its config URL).
const enterprisePrefix = "enterprises/"

// ParseScope reads the scope strings String writes: "org", "owner/repo" or "enterprises/<slug>".
func ParseScope(scope string) (Scope, error) {
	if slug, ok := strings.CutPrefix(scope, enterprisePrefix); ok && slug != "" && !strings.Contains(slug, "/") {
		return EnterpriseScope(slug), nil
	}
	if strings.Contains(scope, "/") {
		return RepoScope(scope)
	}
	return OrgScope(scope), nil
}

// ScopeOf returns a target's scope.
func ScopeOf(t config.Target) (Scope, error) {
	if t.Repository != "" {
		return RepoScope(t.Repository)
	}
	if t.Enterprise != "" {
		return EnterpriseScope(t.Enterprise), nil
	}
	if t.Organization == "" {
		return Scope{}, fmt.Errorf("target %s names neither a repository nor an organization", t.Name)
	}
	return OrgScope(t.Organization), nil
}

// IsOrg reports whether the scope is an organisation.
func (s Scope) IsOrg() bool { return s.Repo == "" && s.Enterprise == "" }

// IsEnterprise reports whether the scope is an enterprise.
func (s Scope) IsEnterprise() bool { return s.Enterprise != "" }

// String is the scope as the scale-set client's config URL spells it: "org", "owner/repo" or
// "enterprises/<slug>".
func (s Scope) String() string {
	switch {
	case s.IsEnterprise():
		return enterprisePrefix + s.Enterprise
	case s.IsOrg():
		return s.Owner
	}
	return s.Owner + "/" + s.Repo
}

// pick returns repo, org or ent by the scope's kind.
func pick[T any](s Scope, repo, org, ent T) T {
	switch {
	case s.IsEnterprise():
		return ent
	case s.IsOrg():
		return org
	}
	return repo
}

// perm is what a call needs, per credential kind, to phrase a 403 as a remedy. At enterprise
// level only a classic token (or an OAuth app's user token) with an enterprise scope is accepted:
// GitHub's enterprise runner endpoints take no GitHub App token and no fine-grained token.
type perm struct {
	app, appOrg                     string // GitHub App permission, repo and org scope
	classic, classicOrg, classicEnt string // classic PAT scope
	fine, fineOrg                   string // fine-grained PAT permission
	user, userOrg, userEnt          string // what the signed-in user must be
}

var (
	permRunners = perm{
		app: "administration: write", appOrg: "organization_self_hosted_runners: write",
		classic: "repo", classicOrg: "admin:org", classicEnt: "manage_runners:enterprise",
		fine: "Administration: read and write", fineOrg: "Self-hosted runners: read and write",
		user: "a repository admin", userOrg: "an organization owner", userEnt: "an enterprise owner",
	}
	permActions = perm{
		app: "actions: read", appOrg: "actions: read",
		classic: "repo", classicOrg: "repo",
		fine: "Actions: read", fineOrg: "Actions: read",
		user: "able to read the repository", userOrg: "able to read the organization's repositories",
	}
	permMetadata = perm{
		app: "metadata: read", appOrg: "metadata: read",
		classic: "repo", classicOrg: "read:org",
		fine: "Metadata: read", fineOrg: "Metadata: read",
		user: "a member", userOrg: "a member of the organization",
	}
)

// remedy phrases a 403 for the operator: which permission the credential lacks, and where.
func (p perm) remedy(kind config.AuthKind, s Scope, ghMsg string) string {
	if p.app == "" || s.IsEnterprise() && p.classicEnt == "" {
		return orDefault(ghMsg, "access denied") + " (check the credential's permissions on " + s.String() + ")"
	}
	if s.IsEnterprise() {
		return enterpriseRemedy(kind, p, s)
	}
	switch kind {
	case config.AuthApp:
		return fmt.Sprintf("the App lacks the `%s` permission on %s", pick(s, p.app, p.appOrg, ""), s)
	case config.AuthDeviceFlow:
		return fmt.Sprintf("the signed-in user must be %s of %s and the App needs the `%s` permission", pick(s, p.user, p.userOrg, ""), s, pick(s, p.app, p.appOrg, ""))
	default:
		return fmt.Sprintf("the token lacks the `%s` scope (classic token) or the `%s` permission (fine-grained token) on %s",
			pick(s, p.classic, p.classicOrg, ""), pick(s, p.fine, p.fineOrg, ""), s)
	}
}

// enterpriseRemedy: GitHub's enterprise runner endpoints accept a classic token (or an OAuth
// app's user token) with the enterprise scope, and nothing else.
func enterpriseRemedy(kind config.AuthKind, p perm, s Scope) string {
	switch kind {
	case config.AuthApp:
		return fmt.Sprintf("GitHub Apps cannot manage enterprise runners (%s takes no App token): use a classic token with the `%s` scope, held by %s", s, p.classicEnt, p.userEnt)
	case config.AuthDeviceFlow:
		return fmt.Sprintf("the signed-in user must be %s of %s, signed in through an OAuth app with the `%s` scope (a GitHub App's user token cannot manage enterprise runners)", p.userEnt, s, p.classicEnt)
	default:
		return fmt.Sprintf("the token lacks the `%s` scope on %s: use a classic token (fine-grained tokens cannot reach enterprise runners) of %s", p.classicEnt, s, p.userEnt)
	}
}

// Need is one permission (GitHub App, fine-grained token, signed-in user) or OAuth scope (classic
// token) that a target's credential must carry for the calls the daemon makes there.
type Need struct {
	Name  string `json:"name"`            // "administration", "admin:org", "Administration: read and write"
	Level string `json:"level,omitempty"` // App permissions: "read" or "write"
	For   string `json:"for"`             // what the daemon does with it, e.g. "register a runner"
}

// Needs lists what a credential of kind needs on s for everything the daemon does there: the same
// table remedy phrases GitHub's 403s with. classic picks OAuth scopes over fine-grained
// permissions for a token.
func Needs(kind config.AuthKind, classic bool, s Scope) []Need {
	type use struct {
		p    perm
		what string
	}
	uses := []use{{permRunners, "register, list and remove runners"}, {permActions, "read queued jobs"}}
	switch {
	case s.IsEnterprise():
		// No jobs are read at enterprise level (scale sets or webhooks bring demand), and only a
		// classic scope is accepted there, by every credential kind that can reach it at all.
		return []Need{{Name: permRunners.classicEnt, For: "register, list and remove enterprise runners"}}
	case s.IsOrg():
		uses = append(uses, use{permMetadata, "list the organization's repositories"})
	}
	var out []Need
	for _, u := range uses {
		var n Need
		switch {
		case kind == config.AuthApp || kind == config.AuthDeviceFlow:
			n.Name, n.Level, _ = strings.Cut(pick(s, u.p.app, u.p.appOrg, ""), ": ")
		case classic:
			n.Name = pick(s, u.p.classic, u.p.classicOrg, "")
		default:
			n.Name = pick(s, u.p.fine, u.p.fineOrg, "")
		}
		n.For = u.what
		if i := slices.IndexFunc(out, func(o Need) bool { return o.Name == n.Name }); i >= 0 {
			out[i].For += "; " + n.For
			continue
		}
		out = append(out, n)
	}
	return out
}

// GrantedBy reports whether an installation's permissions cover n: write covers read.
func (n Need) GrantedBy(perms map[string]string) bool {
	got := perms[n.Name]
	return got == "write" || (got == "read" && n.Level == "read")
}

// impliedScopes are the classic scopes a broader one includes (docs.github.com, "Scopes for OAuth
// apps").
var impliedScopes = map[string][]string{
	"repo":             {"repo:status", "repo_deployment", "public_repo", "repo:invite", "security_events"},
	"admin:org":        {"write:org", "read:org", "manage_runners:org"},
	"admin:enterprise": {"manage_runners:enterprise", "manage_billing:enterprise", "read:enterprise"},
	"write:org":        {"read:org"},
}

// CoveredBy reports whether a classic token's scopes include n, itself or through a broader scope.
func (n Need) CoveredBy(scopes []string) bool {
	var has func(want string, in []string) bool
	has = func(want string, in []string) bool {
		for _, s := range in {
			if s == want || has(want, impliedScopes[s]) {
				return true
			}
		}
		return false
	}
	return has(n.Name, scopes)
}
