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
	page, _ := s.reposPage(w, r, func(rp *repo) bool { return rp.owner == a && s.canSee(p, rp) })
	writeJSON(w, http.StatusOK, page)
}

// reposPage is the page the request asks for of the repositories keep picks, in id order as GitHub
// lists them and in GitHub's form, with the Link header set; total counts every page.
func (s *Server) reposPage(w http.ResponseWriter, r *http.Request, keep func(*repo) bool) (page []*github.Repository, total int) {
	var repos []*repo
	for _, rp := range s.repos {
		if keep(rp) {
			repos = append(repos, rp)
		}
	}
	slices.SortFunc(repos, func(a, b *repo) int { return int(a.id - b.id) })
	lo, hi := paginate(w, r, len(repos))
	page = []*github.Repository{}
	for _, rp := range repos[lo:hi] {
		page = append(page, s.apiRepo(rp))
	}
	return page, len(repos)
}
