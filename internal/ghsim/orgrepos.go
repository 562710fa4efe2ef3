package ghsim

import (
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-github/v62/github"
)

// handleOrgRepos serves GET /orgs/{org}/repos: the organization's repositories the caller can
// see, paginated, as go-github's Repository objects. Demand for an organization target with a
// token or device-flow credential starts here (an App uses /installation/repositories).
func (s *Server) handleOrgRepos(w http.ResponseWriter, r *http.Request, p *principal) {
	a := s.accounts[strings.ToLower(r.PathValue("org"))]
	if a == nil || !a.isOrg {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	var repos []*repo
	for _, rp := range s.repos {
		if rp.owner == a && s.canSee(p, rp) {
			repos = append(repos, rp)
		}
	}
	slices.SortFunc(repos, func(a, b *repo) int { return int(a.id - b.id) })
	lo, hi := paginate(w, r, len(repos))
	out := []*github.Repository{}
	for _, rp := range repos[lo:hi] {
		out = append(out, s.apiRepo(rp))
	}
	writeJSON(w, http.StatusOK, out)
}
