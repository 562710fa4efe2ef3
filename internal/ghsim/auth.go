package ghsim

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// TokenOptions describe a personal-access-token-like credential made by AddToken.
type TokenOptions struct {
	Login     string        // the user the token acts for; default "octocat"
	Repos     []string      // "owner/name" the token may see; empty = all
	NoAdmin   bool          // lacks administration rights: runner endpoints answer 403
	ExpiresIn time.Duration // 0 = never expires
	// Scopes are a classic token's OAuth scopes, sent back in X-OAuth-Scopes on every answer;
	// nil = DefaultScopes (repo, admin:org), empty = none.
	Scopes []string
	// FineGrained makes a fine-grained token (github_pat_...): no X-OAuth-Scopes, and Permissions
	// (nil = DefaultPermissions) decide instead of scopes.
	FineGrained bool
	Permissions map[string]string
}

// AddToken creates a valid token (ghp_..., or github_pat_... when fine-grained) and returns it.
// Tokens of one login share a budget.
func (s *Server) AddToken(o TokenOptions) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.Login == "" {
		o.Login = "octocat"
	}
	t := &token{kind: "pat", login: o.Login, noAdmin: o.NoAdmin, bucket: s.bucketFor("user:" + strings.ToLower(o.Login))}
	if len(o.Repos) > 0 {
		t.repos = map[string]bool{}
		for _, r := range o.Repos {
			t.repos[strings.ToLower(r)] = true
		}
	}
	if o.ExpiresIn > 0 {
		t.expiresAt = s.now().Add(o.ExpiresIn)
	}
	prefix := "ghp_"
	switch {
	case o.FineGrained:
		prefix, t.perms = "github_pat_", maps.Clone(o.Permissions)
		if t.perms == nil {
			t.perms = DefaultPermissions()
		}
	case o.Scopes == nil:
		t.scopes = DefaultScopes()
	default:
		t.scopes = slices.Clone(o.Scopes)
	}
	v := newSecret(prefix)
	s.tokens[v] = t
	return v
}

// RevokeToken makes tok answer 401 Bad credentials from now on, as a revoked token does.
func (s *Server) RevokeToken(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[tok]; ok {
		t.revoked = true
	}
}

// principal is who a request acts as: a token, or a GitHub App proven by its JWT.
type principal struct {
	tok    *token
	app    *app
	bucket *bucket
}

type principalKey struct{}

func principalFrom(ctx context.Context) *principal {
	p, _ := ctx.Value(principalKey{}).(*principal)
	return p
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	for _, p := range []string{"token ", "Token ", "bearer ", "Bearer "} {
		if v, ok := strings.CutPrefix(h, p); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// authenticate resolves the request's credential; it returns a message for a 401 when there is none.
// Callers hold s.mu.
func (s *Server) authenticate(r *http.Request) (*principal, string) {
	v := bearer(r)
	if v == "" {
		return nil, "Requires authentication"
	}
	if strings.Count(v, ".") == 2 && strings.HasPrefix(v, "eyJ") {
		a, msg := s.verifyAppJWT(v)
		if a == nil {
			return nil, msg
		}
		return &principal{app: a, bucket: a.bucket}, ""
	}
	t, ok := s.tokens[v]
	if !ok || t.revoked || (!t.expiresAt.IsZero() && !s.now().Before(t.expiresAt)) {
		return nil, "Bad credentials"
	}
	return &principal{tok: t, bucket: t.bucket}, ""
}

// canSee reports whether p may read repository rp. Callers hold s.mu.
func (s *Server) canSee(p *principal, rp *repo) bool {
	t := p.tok
	if t == nil {
		return false
	}
	key := strings.ToLower(rp.fullName())
	if t.repos != nil && !t.repos[key] {
		return false
	}
	if t.kind == "installation" {
		inst := s.installations[t.installationID]
		if inst == nil || inst.account != rp.owner {
			return false
		}
		return inst.repos == nil || inst.repos[key]
	}
	return true
}

// canSeeOrg reports whether p may act on organization a. Callers hold s.mu.
func (s *Server) canSeeOrg(p *principal, a *account) bool {
	t := p.tok
	if t == nil {
		return false
	}
	if t.kind == "installation" {
		inst := s.installations[t.installationID]
		return inst != nil && inst.account == a
	}
	return t.repos == nil
}

// lookupRepo finds the path's repository as p sees it, writing GitHub's 404 when p cannot, and
// GitHub's 403 when p lacks what a acts on. Callers hold s.mu.
func (s *Server) lookupRepo(w http.ResponseWriter, r *http.Request, p *principal, a access) *repo {
	rp := s.repos[strings.ToLower(r.PathValue("owner")+"/"+r.PathValue("repo"))]
	if rp == nil || !s.canSee(p, rp) {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil
	}
	if rp.forbidden {
		msg := "Resource not accessible by personal access token"
		if p.tok.kind == "installation" {
			msg = "Resource not accessible by integration"
		}
		writeError(w, http.StatusForbidden, msg)
		return nil
	}
	if !s.allow(w, p, a, false) {
		return nil
	}
	return rp
}

// lookupOrg is lookupRepo for /orgs/{org}/... paths. Callers hold s.mu.
func (s *Server) lookupOrg(w http.ResponseWriter, r *http.Request, p *principal, need access) *account {
	org := s.accounts[strings.ToLower(r.PathValue("org"))]
	if org == nil || !org.isOrg || !s.canSeeOrg(p, org) {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil
	}
	if !s.allow(w, p, need, true) {
		return nil
	}
	return org
}

// requireToken answers 401 to a request made with an App JWT where a token is needed.
func requireToken(w http.ResponseWriter, p *principal) bool {
	if p.tok == nil {
		writeError(w, http.StatusUnauthorized, "A JSON web token cannot be used to access this endpoint; use an installation access token")
		return false
	}
	return true
}

// errUnknown is the error for a scenario call naming something the simulator does not have.
func errUnknown(kind, name string) error {
	return fmt.Errorf("ghsim: no %s %q; create it first", kind, name)
}
