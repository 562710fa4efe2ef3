package github

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runner-manager/runner-manager/config"
)

// Scope is what runners are registered against: a repository (Owner+Repo) or an organisation
// (Owner only).
type Scope struct {
	Owner string
	Repo  string
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

// ScopeOf returns a target's scope.
func ScopeOf(t config.Target) (Scope, error) {
	if t.Repository != "" {
		return RepoScope(t.Repository)
	}
	if t.Organization == "" {
		return Scope{}, fmt.Errorf("target %s names neither a repository nor an organization", t.Name)
	}
	return OrgScope(t.Organization), nil
}

// IsOrg reports whether the scope is an organisation.
func (s Scope) IsOrg() bool { return s.Repo == "" }

func (s Scope) String() string {
	if s.IsOrg() {
		return s.Owner
	}
	return s.Owner + "/" + s.Repo
}

// perm is what a call needs, per credential kind, to phrase a 403 as a remedy.
type perm struct {
	app, appOrg         string // GitHub App permission, repo and org scope
	classic, classicOrg string // classic PAT scope
	fine, fineOrg       string // fine-grained PAT permission
	user, userOrg       string // what the signed-in user must be
}

var (
	permRunners = perm{
		app: "administration: write", appOrg: "organization_self_hosted_runners: write",
		classic: "repo", classicOrg: "admin:org",
		fine: "Administration: read and write", fineOrg: "Self-hosted runners: read and write",
		user: "a repository admin", userOrg: "an organization owner",
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
	pick := func(repo, org string) string {
		if s.IsOrg() {
			return org
		}
		return repo
	}
	if p.app == "" {
		return orDefault(ghMsg, "access denied") + " (check the credential's permissions on " + s.String() + ")"
	}
	switch kind {
	case config.AuthApp:
		return fmt.Sprintf("the App lacks the `%s` permission on %s", pick(p.app, p.appOrg), s)
	case config.AuthDeviceFlow:
		return fmt.Sprintf("the signed-in user must be %s of %s and the App needs the `%s` permission", pick(p.user, p.userOrg), s, pick(p.app, p.appOrg))
	default:
		return fmt.Sprintf("the token lacks the `%s` scope (classic token) or the `%s` permission (fine-grained token) on %s",
			pick(p.classic, p.classicOrg), pick(p.fine, p.fineOrg), s)
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
	if s.IsOrg() {
		uses = append(uses, use{permMetadata, "list the organization's repositories"})
	}
	var out []Need
	for _, u := range uses {
		pick := func(repo, org string) string {
			if s.IsOrg() {
				return org
			}
			return repo
		}
		var n Need
		switch {
		case kind == config.AuthApp || kind == config.AuthDeviceFlow:
			n.Name, n.Level, _ = strings.Cut(pick(u.p.app, u.p.appOrg), ": ")
		case classic:
			n.Name = pick(u.p.classic, u.p.classicOrg)
		default:
			n.Name = pick(u.p.fine, u.p.fineOrg)
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
	"repo":      {"repo:status", "repo_deployment", "public_repo", "repo:invite", "security_events"},
	"admin:org": {"write:org", "read:org", "manage_runners:org"},
	"write:org": {"read:org"},
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
