package ghsim

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-github/v62/github"
)

// What a credential must carry, per credential kind, for the endpoints the simulator serves
// (docs.github.com, each endpoint's "Fine-grained access tokens" and "OAuth app tokens and personal
// access tokens (classic)" notes). The simulator takes the stricter reading where GitHub's answer is
// not documented: its repositories are private, so a classic token needs `repo` for them, and a
// read-only permission is refused on every runner endpoint, GETs included (docs/simulator.md).
const (
	permAdministration = "administration"                   // repository runners
	permOrgRunners     = "organization_self_hosted_runners" // organization runners and runner groups
	permActions        = "actions"                          // workflow runs and jobs
	permMetadata       = "metadata"
	scopeRepo          = "repo"
	scopeAdminOrg      = "admin:org"
)

// access is what an endpoint reads or changes.
type access int

const (
	accessActions access = iota // workflow runs and jobs: actions: read, or the repo scope
	accessRunners               // self-hosted runners and runner groups: administration (or its org twin): write, or repo / admin:org
)

// DefaultPermissions are what an installation or a fine-grained token has unless told otherwise:
// everything runner-manager needs.
func DefaultPermissions() map[string]string {
	return map[string]string{permActions: "read", permAdministration: "write", permMetadata: "read", permOrgRunners: "write"}
}

// DefaultScopes are a classic token's scopes unless TokenOptions.Scopes says otherwise.
func DefaultScopes() []string { return []string{scopeAdminOrg, scopeRepo} }

// SetInstallationPermissions replaces the installation's permissions (name -> "read" or "write");
// tokens minted afterwards carry them. A permission left out is not granted.
func (s *Server) SetInstallationPermissions(id int64, perms map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := s.installations[id]
	if inst == nil {
		return errUnknown("installation", strconv.FormatInt(id, 10))
	}
	inst.perms = maps.Clone(perms)
	return nil
}

// allow writes GitHub's 403 and returns false when p's credential lacks what access needs on a
// repository (org false) or an organization. Callers hold s.mu.
func (s *Server) allow(w http.ResponseWriter, p *principal, a access, org bool) bool {
	t := p.tok
	ok := !(a == accessRunners && t.noAdmin)
	msg := "Must have admin rights to Repository."
	switch {
	case t.scopes != nil:
		need := scopeRepo
		if a == accessRunners && org {
			need = scopeAdminOrg
		}
		if !slices.Contains(t.scopes, need) {
			ok = false
			msg = "Resource not accessible by personal access token"
			w.Header().Set("X-Accepted-OAuth-Scopes", need)
		}
	case t.perms != nil:
		name, level := permActions, t.perms[permActions]
		if a == accessRunners {
			name = permAdministration
			if org {
				name = permOrgRunners
			}
			if level = t.perms[name]; level != "write" {
				level = ""
			}
		}
		if level == "" {
			ok = false
			msg = "Resource not accessible by personal access token"
			if t.kind == "installation" {
				msg = "Resource not accessible by integration"
			}
		}
	}
	if !ok {
		writeError(w, http.StatusForbidden, msg)
	}
	return ok
}

// setScopeHeader sends a classic token's scopes on every answer, as GitHub does; other credentials
// get no such header.
func setScopeHeader(h http.Header, p *principal) {
	if p != nil && p.tok != nil && p.tok.scopes != nil {
		h.Set("X-OAuth-Scopes", strings.Join(p.tok.scopes, ", "))
	}
}

// apiPermissions is perms in go-github's type, the shape of an installation's "permissions".
func apiPermissions(perms map[string]string) *github.InstallationPermissions {
	raw, _ := json.Marshal(perms) // a map of strings always marshals
	var out github.InstallationPermissions
	_ = json.Unmarshal(raw, &out)
	return &out
}
