package ghsim

import (
	"net/http"
	"net/url"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
)

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
func (s *Server) inRepo(need access, h func(w http.ResponseWriter, r *http.Request, rp *repo)) http.HandlerFunc {
	return s.asToken(func(w http.ResponseWriter, r *http.Request, p *principal) {
		if rp := s.lookupRepo(w, r, p, need); rp != nil {
			h(w, r, rp)
		}
	})
}

// inOrg serves h for a token that may use need on the path's {org} (lookupOrg).
func (s *Server) inOrg(need access, h func(w http.ResponseWriter, r *http.Request, org *account)) http.HandlerFunc {
	return s.asToken(func(w http.ResponseWriter, r *http.Request, p *principal) {
		if a := s.lookupOrg(w, r, p, need); a != nil {
			h(w, r, a)
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

// asRunner serves h for a fake runner's call (/_ghsim/runner/) that its JIT credential
// authenticates (runnerCall), s.mu held.
func (s *Server) asRunner(h func(w http.ResponseWriter, rn *runner)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		var hello runnerproto.Hello
		if rn := s.runnerCall(w, r, &hello); rn != nil {
			h(w, rn)
		}
	}
}

// onRunnersJob serves h for a fake runner's call about the job it holds (runnersJob), s.mu held.
func (s *Server) onRunnersJob(h func(w http.ResponseWriter, j *job, req runnerproto.JobRequest)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		var req runnerproto.JobRequest
		if j := s.runnersJob(w, r, &req); j != nil {
			h(w, j, req)
		}
	}
}

// asOAuthClient serves h for an OAuth call (/login/...) of a registered client_id, s.mu held; q
// holds the call's parameters.
func (s *Server) asOAuthClient(h func(w http.ResponseWriter, r *http.Request, q url.Values, clientID string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := oauthParams(r)
		s.mu.Lock()
		defer s.mu.Unlock()
		cid := q.Get("client_id")
		if !s.oauthClients[cid] {
			oauthError(w, r, "incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.", nil)
			return
		}
		h(w, r, q, cid)
	}
}
