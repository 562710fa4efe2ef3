package ghsim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-github/v62/github"
)

// Enterprises: an enterprise owns organisations; its runners (registered at
// /enterprises/{enterprise}/actions/runners) take jobs of every repository of those
// organisations that their runner group serves, its scale sets take the jobs that name them, and
// workflow_job deliveries of its organisations' repositories carry an "enterprise" object. As on
// GitHub, only a classic token (or an OAuth app's user token) with manage_runners:enterprise or
// admin:enterprise reaches the enterprise endpoints: App installation tokens and fine-grained tokens
// are refused (docs.github.com, "Self-hosted runners", enterprise endpoints).

type enterprise struct {
	id   int64
	slug string
	name string
	orgs map[*account]bool
}

func (e *enterprise) scope() scope { return scope("enterprise:" + strings.ToLower(e.slug)) }

// Classic scopes of the enterprise runner endpoints; admin:enterprise includes the narrower one.
const (
	scopeManageRunnersEnterprise = "manage_runners:enterprise"
	scopeAdminEnterprise         = "admin:enterprise"
)

// AddEnterprise creates the enterprise slug (if new) owning the given organisations (created if
// new) and returns its id. An organisation belongs to one enterprise at most: the last call wins.
func (s *Server) AddEnterprise(slug string, orgs ...string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enterprises == nil {
		s.enterprises = map[string]*enterprise{}
	}
	key := strings.ToLower(slug)
	e := s.enterprises[key]
	if e == nil {
		e = &enterprise{id: s.newID(), slug: slug, name: slug, orgs: map[*account]bool{}}
		s.enterprises[key] = e
	}
	for _, o := range orgs {
		a := s.account(o, true)
		for _, other := range s.enterprises {
			delete(other.orgs, a)
		}
		e.orgs[a] = true
	}
	return e.id
}

// CreateEnterpriseRunnerGroup adds a runner group to the enterprise slug and returns its id.
func (s *Server) CreateEnterpriseRunnerGroup(slug, name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &runnerGroup{id: s.newID(), name: name, org: groupOwner(scope("enterprise:" + strings.ToLower(slug)))}
	s.groups[g.id] = g
	return g.id
}

// groupOwner is runnerGroup.org for the groups of scope sc: the organisation's lower-case login,
// "enterprises/<slug>" for an enterprise (no login contains a slash), "" for a repository.
func groupOwner(sc scope) string {
	switch kind, v, _ := strings.Cut(string(sc), ":"); kind {
	case "org":
		return v
	case "enterprise":
		return "enterprises/" + v
	}
	return ""
}

// enterpriseOf is the enterprise owning account a, or nil. Callers hold s.mu.
func (s *Server) enterpriseOf(a *account) *enterprise {
	for _, e := range s.enterprises {
		if e.orgs[a] {
			return e
		}
	}
	return nil
}

// enterpriseScopeOf is the scope of a's enterprise, or "" (a scope no runner has). Callers hold s.mu.
func (s *Server) enterpriseScopeOf(a *account) scope {
	if e := s.enterpriseOf(a); e != nil {
		return e.scope()
	}
	return ""
}

// hookEnterprise is the "enterprise" object of a webhook delivery.
type hookEnterprise struct {
	ID      int64  `json:"id"`
	Slug    string `json:"slug"`
	Name    string `json:"name"`
	NodeID  string `json:"node_id"`
	HTMLURL string `json:"html_url"`
}

// hookEnterpriseOf renders a's enterprise for a delivery, nil without one. Callers hold s.mu.
func (s *Server) hookEnterpriseOf(a *account) *hookEnterprise {
	e := s.enterpriseOf(a)
	if e == nil {
		return nil
	}
	return &hookEnterprise{ID: e.id, Slug: e.slug, Name: e.name, NodeID: fmt.Sprintf("E_sim%d", e.id),
		HTMLURL: s.URL() + "/enterprises/" + e.slug}
}

// lookupEnterprise finds the path's enterprise, writing GitHub's answer when p's credential cannot
// act on it: 401 for an App JWT, 404 for an unknown slug, 403 for an App token, a fine-grained token or a classic token
// without the enterprise scope. Callers hold s.mu.
func (s *Server) lookupEnterprise(w http.ResponseWriter, r *http.Request, p *principal) *enterprise {
	if !requireToken(w, p) {
		return nil
	}
	e := s.enterprises[strings.ToLower(r.PathValue("enterprise"))]
	if e == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil
	}
	t, refusal := p.tok, ""
	switch {
	case t.kind == "installation":
		refusal = "Resource not accessible by integration"
	case t.scopes == nil || t.noAdmin:
		refusal = "Resource not accessible by personal access token"
	case !slices.Contains(t.scopes, scopeManageRunnersEnterprise) && !slices.Contains(t.scopes, scopeAdminEnterprise):
		w.Header().Set("X-Accepted-OAuth-Scopes", scopeManageRunnersEnterprise)
		refusal = "Resource not accessible by personal access token"
	}
	if refusal != "" {
		writeError(w, http.StatusForbidden, refusal)
		return nil
	}
	return e
}

// handleEnterpriseRunnerGroups serves GET /enterprises/{enterprise}/actions/runner-groups: the
// Default group and the enterprise's own.
func (s *Server) handleEnterpriseRunnerGroups(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookupEnterprise(w, r, principalFrom(r.Context()))
	if e == nil {
		return
	}
	groups := s.groupsOf(groupOwner(e.scope()))
	lo, hi := paginate(w, r, len(groups))
	out := &github.EnterpriseRunnerGroups{TotalCount: github.Int(len(groups)), RunnerGroups: []*github.EnterpriseRunnerGroup{}}
	for _, g := range groups[lo:hi] {
		out.RunnerGroups = append(out.RunnerGroups, &github.EnterpriseRunnerGroup{ID: github.Int64(g.id), Name: github.String(g.name),
			Visibility: github.String("all"), Default: github.Bool(g.id == 1), AllowsPublicRepositories: github.Bool(false),
			SelectedOrganizationsURL: github.String(fmt.Sprintf("%s/enterprises/%s/actions/runner-groups/%d/organizations", s.URL(), e.slug, g.id))})
	}
	writeJSON(w, http.StatusOK, out)
}

// enterpriseAdminRoutes are the admin API's enterprise calls (docs/simulator.md), for the
// standalone simulator and the end-to-end tests: an enterprise with its organisations, an
// enterprise runner group, and a classic token with the scopes given (such as
// manage_runners:enterprise).
func (s *Server) enterpriseAdminRoutes(p *http.ServeMux) {
	type body struct {
		Slug   string   `json:"slug"`
		Name   string   `json:"name"`
		Orgs   []string `json:"orgs"`
		Login  string   `json:"login"`
		Scopes []string `json:"scopes"`
	}
	route := func(pattern string, fn func(b body) any) {
		p.HandleFunc("POST /_ghsim/admin"+pattern, func(w http.ResponseWriter, r *http.Request) {
			var b body
			if err := decodeBody(r, &b); err != nil {
				writeError(w, http.StatusBadRequest, "admin: request body is not the expected JSON: "+err.Error())
				return
			}
			if b.Slug == "" && pattern != "/enterprise-tokens" {
				writeError(w, http.StatusUnprocessableEntity, "admin: slug is required: the enterprise's slug")
				return
			}
			writeJSON(w, http.StatusOK, fn(b))
		})
	}
	type id struct {
		ID int64 `json:"id"`
	}
	route("/enterprises", func(b body) any { return id{s.AddEnterprise(b.Slug, b.Orgs...)} })
	route("/enterprises/runner-groups", func(b body) any { return id{s.CreateEnterpriseRunnerGroup(b.Slug, b.Name)} })
	route("/enterprise-tokens", func(b body) any {
		scopes := b.Scopes
		if scopes == nil {
			scopes = []string{scopeManageRunnersEnterprise}
		}
		return map[string]string{"token": s.AddToken(TokenOptions{Login: b.Login, Scopes: scopes})}
	})
}
