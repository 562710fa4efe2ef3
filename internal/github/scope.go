package github

import (
	"fmt"
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
