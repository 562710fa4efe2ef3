package ghsim

import (
	"crypto/rsa"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v62/github"
)

// CreateApp registers a GitHub App whose JWTs are signed by the private half of key. Its client
// ID is AppClientID(appID).
func (s *Server) CreateApp(appID int64, key *rsa.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps[appID] = &app{id: appID, clientID: AppClientID(appID), key: key, slug: fmt.Sprintf("ghsim-app-%d", appID),
		bucket: s.bucketFor(fmt.Sprintf("app:%d", appID))}
}

// AppClientID is the client ID of App appID on the simulator: "Iv23li" and 14 hex digits, the
// form of the client IDs GitHub gives Apps since 2024 (20 characters). GitHub recommends it as a
// JWT's iss in place of the numeric App ID; the simulator accepts either.
func AppClientID(appID int64) string { return fmt.Sprintf("Iv23li%014x", appID) }

// appByIssuer finds the App a JWT's iss names: its numeric ID or its client ID. Callers hold s.mu.
func (s *Server) appByIssuer(iss string) (*app, error) {
	if id, err := strconv.ParseInt(iss, 10, 64); err == nil {
		if a := s.apps[id]; a != nil {
			return a, nil
		}
		return nil, fmt.Errorf("no app %d", id)
	}
	for _, a := range s.apps {
		if a.clientID == iss {
			return a, nil
		}
	}
	return nil, fmt.Errorf("iss %q is neither an app id nor an app's client id", iss)
}

// CreateInstallation installs app appID on account (an org or user login). repos limits it to
// those "owner/name" repositories; none means all of the account's repositories.
func (s *Server) CreateInstallation(appID int64, account string, repos ...string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.apps[appID] == nil {
		return 0, errUnknown("app", strconv.FormatInt(appID, 10))
	}
	a := s.accounts[strings.ToLower(account)]
	if a == nil {
		return 0, errUnknown("account", account)
	}
	inst := &installation{id: s.newID(), appID: appID, account: a, perms: DefaultPermissions()}
	inst.bucket = s.bucketFor(fmt.Sprintf("inst:%d", inst.id))
	if len(repos) > 0 {
		inst.repos = map[string]bool{}
		for _, r := range repos {
			inst.repos[strings.ToLower(r)] = true
		}
	}
	s.installations[inst.id] = inst
	return inst.id, nil
}

// SetInstallationAdmin grants (true, the default) or withholds (false) administration: write and
// organization_self_hosted_runners: write (read instead). Tokens minted afterwards carry the
// change; without it the runner endpoints answer 403 "Resource not accessible by integration".
func (s *Server) SetInstallationAdmin(id int64, admin bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := s.installations[id]
	if inst == nil {
		return errUnknown("installation", strconv.FormatInt(id, 10))
	}
	level := "write"
	if !admin {
		level = "read"
	}
	inst.perms[permAdministration], inst.perms[permOrgRunners] = level, level
	return nil
}

// verifyAppJWT checks an App JWT: RS256 under the key of the app named by iss (its ID or its
// client ID), iat and exp
// against the simulator's clock, and a lifetime of at most 10 minutes as GitHub requires.
// Callers hold s.mu.
func (s *Server) verifyAppJWT(raw string) (*app, string) {
	var claims jwt.RegisteredClaims
	var found *app
	// Claims are validated below against the simulator's clock, not the wall clock.
	_, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		a, err := s.appByIssuer(claims.Issuer)
		if err != nil {
			return nil, err
		}
		found = a
		return found.key, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithoutClaimsValidation())
	if err != nil || found == nil {
		return nil, "A JSON web token could not be decoded"
	}
	now := s.now()
	switch {
	case claims.ExpiresAt == nil || claims.IssuedAt == nil:
		return nil, "'Expiration time' claim ('exp') and 'Issued at' claim ('iat') are required"
	case !now.Before(claims.ExpiresAt.Time):
		return nil, "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
	case claims.IssuedAt.After(now.Add(time.Minute)):
		return nil, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
	case claims.ExpiresAt.Sub(now) > 10*time.Minute+time.Minute:
		return nil, "'Expiration time' claim ('exp') is too far in the future"
	}
	return found, ""
}

func requireApp(w http.ResponseWriter, p *principal) bool {
	if p.app == nil {
		writeError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return false
	}
	return true
}

func (s *Server) apiInstallation(inst *installation) *github.Installation {
	sel := "all"
	if inst.repos != nil {
		sel = "selected"
	}
	return &github.Installation{ID: github.Int64(inst.id), AppID: github.Int64(inst.appID), Account: s.apiAccount(inst.account), Permissions: apiPermissions(inst.perms),
		TargetType: s.apiAccount(inst.account).Type, RepositorySelection: github.String(sel),
		AccessTokensURL: github.String(fmt.Sprintf("%s/app/installations/%d/access_tokens", s.APIURL(), inst.id))}
}

// handleAccessToken serves POST /app/installations/{id}/access_tokens (201, ghs_ token, 1 h).
func (s *Server) handleAccessToken(w http.ResponseWriter, r *http.Request, p *principal) {
	inst := byPathID(w, r, s.installations, func(inst *installation) bool { return inst.appID == p.app.id })
	if inst == nil {
		return
	}
	exp := s.now().Add(s.opts.InstallationTokenTTL)
	v := newSecret("ghs_")
	s.tokens[v] = &token{kind: "installation", installationID: inst.id, expiresAt: exp, bucket: inst.bucket, perms: maps.Clone(inst.perms)}
	sel := "all"
	if inst.repos != nil {
		sel = "selected"
	}
	writeJSON(w, http.StatusCreated, struct {
		*github.InstallationToken
		RepositorySelection string `json:"repository_selection"`
	}{&github.InstallationToken{Token: &v, ExpiresAt: ts(exp), Permissions: apiPermissions(inst.perms)}, sel})
}

// handleFindInstallation serves GET /orgs/{org}/installation, /repos/{owner}/{repo}/installation
// and /users/{org}/installation for the App named by the JWT.
func (s *Server) handleFindInstallation(w http.ResponseWriter, r *http.Request, p *principal) {
	owner := r.PathValue("org")
	if owner == "" {
		owner = r.PathValue("owner")
	}
	for _, inst := range s.sortedInstallations() {
		if inst.appID != p.app.id || !strings.EqualFold(inst.account.login, owner) {
			continue
		}
		if name := r.PathValue("repo"); name != "" && inst.repos != nil && !inst.repos[strings.ToLower(owner+"/"+name)] {
			continue
		}
		writeJSON(w, http.StatusOK, s.apiInstallation(inst))
		return
	}
	writeError(w, http.StatusNotFound, "Not Found")
}

func (s *Server) sortedInstallations() []*installation { return byID(s.installations, nil) }

// handleListInstallations serves GET /app/installations.
func (s *Server) handleListInstallations(w http.ResponseWriter, r *http.Request, p *principal) {
	var out []*github.Installation
	for _, inst := range s.sortedInstallations() {
		if inst.appID == p.app.id {
			out = append(out, s.apiInstallation(inst))
		}
	}
	lo, hi := paginate(w, r, len(out))
	writeJSON(w, http.StatusOK, append([]*github.Installation{}, out[lo:hi]...))
}

// handleInstallationRepos serves GET /installation/repositories for an installation token.
func (s *Server) handleInstallationRepos(w http.ResponseWriter, r *http.Request, p *principal) {
	if p.tok.kind != "installation" {
		writeError(w, http.StatusForbidden, "You must authenticate with an installation access token in order to list repositories for an installation.")
		return
	}
	page, total := s.reposPage(w, r, func(rp *repo) bool { return s.canSee(p, rp) })
	out := &github.ListRepositories{TotalCount: github.Int(total), Repositories: page}
	writeJSON(w, http.StatusOK, struct {
		*github.ListRepositories
		RepositorySelection string `json:"repository_selection"`
	}{out, "all"})
}
