package ghsim

import "net/http"

// A REST route's guard (routes.go) names what a credential must be to use it: it answers the 401,
// 403 or 404 GitHub answers, resolves what the path names, and runs the handler with s.mu held, so
// a handler starts with its caller and its repository, organization or runner scope in hand.

// principalHandler serves a request whose caller the guard has checked; s.mu is held.
type principalHandler func(w http.ResponseWriter, r *http.Request, p *principal)

// asToken serves h for a token (PAT, installation or user token); an App JWT is answered 401.
func (s *Server) asToken(h principalHandler) http.HandlerFunc {
	return s.guard(requireToken, h)
}

// asApp serves h for an App JWT; a token is answered 401.
func (s *Server) asApp(h principalHandler) http.HandlerFunc {
	return s.guard(requireApp, h)
}

func (s *Server) guard(require func(http.ResponseWriter, *principal) bool, h principalHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r.Context())
		if !require(w, p) {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		h(w, r, p)
	}
}

// inRepo serves h for a token that may use need on the path's {owner}/{repo} (lookupRepo).
func (s *Server) inRepo(need access, h func(w http.ResponseWriter, r *http.Request, p *principal, rp *repo)) http.HandlerFunc {
	return s.asToken(func(w http.ResponseWriter, r *http.Request, p *principal) {
		if rp := s.lookupRepo(w, r, p, need); rp != nil {
			h(w, r, p, rp)
		}
	})
}

// inOrg serves h for a token that may use need on the path's {org} (lookupOrg).
func (s *Server) inOrg(need access, h func(w http.ResponseWriter, r *http.Request, p *principal, org *account)) http.HandlerFunc {
	return s.asToken(func(w http.ResponseWriter, r *http.Request, p *principal) {
		if a := s.lookupOrg(w, r, p, need); a != nil {
			h(w, r, p, a)
		}
	})
}

// inRunnerScope serves h for a token that may manage the runners of the path's repository or
// organization (scopeOf); org is nil for a repository.
func (s *Server) inRunnerScope(h func(w http.ResponseWriter, r *http.Request, sc scope, org *account)) http.HandlerFunc {
	return s.asToken(func(w http.ResponseWriter, r *http.Request, p *principal) {
		if sc, org, ok := s.scopeOf(w, r, p); ok {
			h(w, r, sc, org)
		}
	})
}
