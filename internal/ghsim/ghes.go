package ghsim

import (
	"net/http"
	"net/url"
	"strings"
)

// ghesAPIPrefix is where GitHub Enterprise Server serves its REST API: a client that is given any
// host but github.com (go-github's WithEnterpriseURLs, GitHub's own actions/scaleset client) calls
// <host>/api/v3/..., runner-registration included.
const ghesAPIPrefix = "/api/v3"

// APIURL is the REST API base URL, without a trailing slash: URL() on a github.com simulator,
// URL()+"/api/v3" on a GHES one (Options.GHES). OAuth, downloads and /_ghsim/ stay at URL().
func (s *Server) APIURL() string {
	if s.opts.GHES {
		return s.URL() + ghesAPIPrefix
	}
	return s.URL()
}

// ghesPath strips /api/v3 from a REST request on a GHES simulator, so every route serves there
// exactly as at github.com's root; a REST path at the root is 404, as on GHES
// (TestGHESServesRESTUnderAPIv3). It reports whether the request goes on.
func (s *Server) ghesPath(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	if !s.opts.GHES || strings.HasPrefix(p, "/_ghsim/") || strings.HasPrefix(p, "/login/") {
		return true
	}
	if rest, ok := strings.CutPrefix(p, ghesAPIPrefix); ok && strings.HasPrefix(rest, "/") {
		r.URL.Path = rest
		r.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, ghesAPIPrefix)
		return true
	}
	s.mu.Lock()
	s.requests[r.Method+" (outside /api/v3)"]++
	s.mu.Unlock()
	writeError(w, http.StatusNotFound, "Not Found")
	return false
}

// requestPath is the path the client asked for, before ghesPath: the one its next-page links
// must name.
func requestPath(r *http.Request) string {
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil && r.RequestURI != "" {
		return u.Path
	}
	return r.URL.Path
}
