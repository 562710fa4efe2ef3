package ghsim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
)

func (s *Server) apiRunner(r *runner) *github.Runner {
	labels := make([]*github.RunnerLabels, 0, len(r.labels))
	for i, l := range r.labels {
		labels = append(labels, &github.RunnerLabels{ID: github.Int64(int64(i + 1)), Name: github.String(l), Type: github.String("custom")})
	}
	return &github.Runner{ID: github.Int64(r.id), Name: github.String(r.name), OS: github.String("Linux"),
		Status: github.String(r.statusAt(s.now())), Busy: github.Bool(r.busy), Labels: labels}
}

// scopeOf resolves the repo or org named in the path to a runner scope, writing 404/403 on failure.
// Callers hold s.mu.
func (s *Server) scopeOf(w http.ResponseWriter, r *http.Request, p *principal) (scope, *account, bool) {
	if r.PathValue("enterprise") != "" {
		e := s.lookupEnterprise(w, r, p)
		if e == nil {
			return "", nil, false
		}
		return e.scope(), nil, true
	}
	if r.PathValue("org") != "" {
		a := s.lookupOrg(w, r, p, accessRunners)
		if a == nil {
			return "", nil, false
		}
		return orgScope(a), a, true
	}
	rp := s.lookupRepo(w, r, p, accessRunners)
	if rp == nil {
		return "", nil, false
	}
	return repoScope(rp), nil, true
}

// handleGenerateJIT serves POST {repo|org}/actions/runners/generate-jitconfig.
func (s *Server) handleGenerateJIT(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	if !requireToken(w, p) {
		return
	}
	var req github.GenerateJITConfigRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, _, ok := s.scopeOf(w, r, p)
	if !ok {
		return
	}
	if strings.TrimSpace(req.Name) == "" || len(req.Labels) == 0 || len(req.Labels) > 100 {
		writeError(w, http.StatusUnprocessableEntity, "Invalid request.\n\nname and 1 to 100 labels are required.")
		return
	}
	g := s.groups[req.RunnerGroupID]
	if req.RunnerGroupID == 0 {
		g = s.groups[1]
	}
	if g == nil || (g.org != "" && g.org != groupOwner(sc)) {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	for _, other := range s.runners {
		if other.scope == sc && strings.EqualFold(other.name, req.Name) {
			writeError(w, http.StatusConflict, "Already exists - A runner with the name "+req.Name+" already exists.")
			return
		}
	}
	rn := &runner{id: s.newID(), name: req.Name, scope: sc, labels: slices.Clone(req.Labels), groupID: g.id,
		groupName: g.name, credential: newSecret("ghsimrunner_"),
		status: RunnerOffline, createdAt: s.now(), fault: s.registeredFault(req.Name)}
	cfg := runnerproto.JITConfig{URL: s.URL(), RunnerID: rn.id, RunnerName: rn.name, Credential: rn.credential,
		Labels: rn.labels, Fault: jitFault(rn.fault)}
	if req.WorkFolder != nil {
		cfg.WorkFolder = *req.WorkFolder
	}
	enc, err := cfg.Encode()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Server Error")
		return
	}
	s.runners[rn.id] = rn
	s.registrations = append(s.registrations, &Registration{RunnerID: rn.id, Name: rn.name, Scope: sc.display(),
		Labels: slices.Clone(rn.labels), RegisteredAt: rn.createdAt})
	writeJSON(w, http.StatusCreated, &github.JITRunnerConfig{Runner: s.apiRunner(rn), EncodedJITConfig: &enc})
}

// handleListRunners serves GET {repo|org}/actions/runners, paginated, with an optional ?name= filter.
func (s *Server) handleListRunners(w http.ResponseWriter, r *http.Request, sc scope, _ *account) {
	all := s.sortedRunners(sc)
	if name := r.URL.Query().Get("name"); name != "" {
		all = slices.DeleteFunc(all, func(x *runner) bool { return !strings.EqualFold(x.name, name) })
	}
	lo, hi := paginate(w, r, len(all))
	out := &github.Runners{TotalCount: len(all), Runners: []*github.Runner{}}
	for _, rn := range all[lo:hi] {
		out.Runners = append(out.Runners, s.apiRunner(rn))
	}
	writeJSON(w, http.StatusOK, out)
}

// runnerInScope finds the path's runner id within sc, writing 404 otherwise.
func (s *Server) runnerInScope(w http.ResponseWriter, r *http.Request, sc scope) *runner {
	return byPathID(w, r, s.runners, func(rn *runner) bool { return rn.scope == sc })
}

// handleGetRunner serves GET {repo|org}/actions/runners/{id}.
func (s *Server) handleGetRunner(w http.ResponseWriter, r *http.Request, sc scope, _ *account) {
	if rn := s.runnerInScope(w, r, sc); rn != nil {
		writeJSON(w, http.StatusOK, s.apiRunner(rn))
	}
}

// handleDeleteRunner serves DELETE {repo|org}/actions/runners/{id}: 204, or 422 while busy.
func (s *Server) handleDeleteRunner(w http.ResponseWriter, r *http.Request, sc scope, _ *account) {
	rn := s.runnerInScope(w, r, sc)
	if rn == nil {
		return
	}
	if rn.busy {
		writeError(w, http.StatusUnprocessableEntity, `Bad request - Runner "`+rn.name+`" is still running a job"`)
		return
	}
	s.removeRunner(rn, "delete")
	w.WriteHeader(http.StatusNoContent)
}

// removeRunner deletes a runner's registration. Callers hold s.mu.
func (s *Server) removeRunner(rn *runner, by string) {
	delete(s.runners, rn.id)
	reg := s.registration(rn.id)
	reg.RemovedAt, reg.RemovedBy = s.now(), by
}

// handleRunnerGroups serves GET /orgs/{org}/actions/runner-groups.
func (s *Server) handleRunnerGroups(w http.ResponseWriter, r *http.Request, a *account) {
	groups := s.groupsOf(strings.ToLower(a.login))
	lo, hi := paginate(w, r, len(groups))
	out := &github.RunnerGroups{TotalCount: len(groups), RunnerGroups: []*github.RunnerGroup{}}
	for _, g := range groups[lo:hi] {
		vis := "all"
		if g.repos != nil {
			vis = "selected"
		}
		out.RunnerGroups = append(out.RunnerGroups, &github.RunnerGroup{ID: github.Int64(g.id), Name: github.String(g.name),
			Visibility: github.String(vis), Default: github.Bool(g.id == 1), Inherited: github.Bool(false),
			SelectedRepositoriesURL: github.String(fmt.Sprintf("%s/orgs/%s/actions/runner-groups/%d/repositories", s.APIURL(), a.login, g.id))})
	}
	writeJSON(w, http.StatusOK, out)
}

// groupsOf lists, by id, the Default group and the groups of owner (runnerGroup.org). Callers
// hold s.mu.
func (s *Server) groupsOf(owner string) []*runnerGroup {
	return byID(s.groups, func(g *runnerGroup) bool { return g.org == "" || g.org == owner })
}

// handleRunnerGroupRepos serves GET /orgs/{org}/actions/runner-groups/{id}/repositories: the
// repositories a group of visibility "selected" serves (empty for "all", as on GitHub).
func (s *Server) handleRunnerGroupRepos(w http.ResponseWriter, r *http.Request, a *account) {
	g := byPathID(w, r, s.groups, func(g *runnerGroup) bool { return g.org == "" || g.org == strings.ToLower(a.login) })
	if g == nil {
		return
	}
	page, total := s.reposPage(w, r, func(rp *repo) bool { return g.repos[strings.ToLower(rp.fullName())] })
	writeJSON(w, http.StatusOK, &github.ListRepositories{TotalCount: github.Int(total), Repositories: page})
}
