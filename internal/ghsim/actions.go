package ghsim

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// The Actions service: the second host a scale-set listener talks to (docs/simulator.md,
// "Actions service"). It listens on its own port so a test can tell which credential went to which
// host: the GitHub credential belongs to the REST host only, the admin and queue tokens to this one.
// Shapes follow the facts file's sections 1-3 (scaleset.md); scaleset_test.go and
// scaleset_queue_test.go pin them.

// ActionsOptions configure the simulated Actions service. Zero values take the defaults shown.
type ActionsOptions struct {
	Addr string // listen address; default "127.0.0.1:0"
	// LongPoll is how long a message GET waits for a message before it answers 202 (real time,
	// GitHub's is about 50 s); default 50 s.
	LongPoll time.Duration
	// SessionExpiry is how long a session nobody polls stays in the way of a new one (409) on the
	// simulator's clock. GitHub does not document it; default 10 min.
	SessionExpiry time.Duration
	AdminTokenTTL time.Duration // the admin JWT's exp; default 1 h
	QueueTokenTTL time.Duration // messageQueueAccessToken lifetime; default 50 min (scaleset PR #123)
	RegTokenTTL   time.Duration // registration token lifetime; default 1 h, as on GitHub
	// AssignTimeout is how long an assigned job waits for a runner before it is cancelled and
	// requeued (at most 3 times); default 10 min.
	AssignTimeout time.Duration
	// GHES plays GitHub Enterprise Server: jobs arrive as JobAvailable and are assigned only once
	// the listener acquires them (scaleset#75).
	GHES bool
	// CustomLabels keeps a scale set's labels beyond the first (its name), as GitHub does with
	// custom scale-set labels (GHES 3.18+ with DistributedTask.AllowRunnerScaleSetCustomLabels;
	// actions/scaleset and ARC 0.14 send them). Off, extras are dropped silently, as without the flag.
	CustomLabels bool
	// BOM prefixes every Actions-service JSON body with a UTF-8 byte-order mark, as the real one may.
	BOM bool
}

func (o *ActionsOptions) withDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	def(&o.LongPoll, 50*time.Second)
	def(&o.SessionExpiry, 10*time.Minute)
	def(&o.AdminTokenTTL, time.Hour)
	def(&o.QueueTokenTTL, 50*time.Minute)
	def(&o.RegTokenTTL, time.Hour)
	def(&o.AssignTimeout, 10*time.Minute)
}

// actionsState is the Actions service's part of the Server; it sits behind s.mu like the rest.
type actionsState struct {
	ln     net.Listener
	http   *http.Server
	mux    *http.ServeMux
	done   <-chan struct{} // closed when the server stops: ends long polls
	key    []byte          // signs admin JWTs
	regs   map[string]*regToken
	sets   map[int64]*scaleSet
	calls  map[string]int // "METHOD pattern" -> requests served
	leaks  []string       // credentials sent to the wrong host (no secret in them)
	nextRQ int64          // runnerRequestId
}

type regToken struct {
	sc      scope
	expires time.Time
}

func (s *Server) newActions() error {
	o := s.opts.Actions
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("ghsim: listen for the Actions service on %s: %w", o.Addr, err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		_ = ln.Close()
		return fmt.Errorf("ghsim: admin token key: %w", err)
	}
	s.act = actionsState{ln: ln, mux: http.NewServeMux(), key: key, regs: map[string]*regToken{},
		sets: map[int64]*scaleSet{}, calls: map[string]int{}, nextRQ: 0}
	s.act.http = &http.Server{Handler: http.HandlerFunc(s.serveActions), ReadHeaderTimeout: 10 * time.Second}
	s.actionsRoutes()
	return nil
}

// ActionsURL is the Actions service's origin (http://127.0.0.1:port). Clients never need it: they
// learn the service URL from runner-registration.
func (s *Server) ActionsURL() string { return "http://" + s.act.ln.Addr().String() }

const (
	rss                    = "/_apis/runtime/runnerscalesets"
	agents                 = "/_apis/distributedtask/pools/0/agents"
	runnerRegistrationPath = "/actions/runner-registration"
	// tenantPrefix starts the Actions-service base URL; the scope id follows, so a client that drops
	// the base URL's path prefix gets 404 (scaleset.md section 1: paths keep the prefix).
	tenantPrefix = "/tenant/{tid}"
	queuePrefix  = "/message-queue/{set}"
)

func (s *Server) actionsRoutes() {
	m := s.act.mux
	h := func(pattern string, fn http.HandlerFunc) { m.HandleFunc(pattern, fn) }
	t := tenantPrefix
	h("GET "+t+"/_apis/runtime/runnergroups/", s.admin(s.handleRunnerGroupByName))
	h("GET "+t+rss, s.admin(s.handleScaleSetByName))
	h("POST "+t+rss, s.admin(s.handleCreateScaleSet))
	h("GET "+t+rss+"/{id}", s.admin(s.withSet(s.handleGetScaleSet)))
	h("PATCH "+t+rss+"/{id}", s.admin(s.withSet(s.handleUpdateScaleSet)))
	h("DELETE "+t+rss+"/{id}", s.admin(s.withSet(s.handleDeleteScaleSet)))
	h("POST "+t+rss+"/{id}/sessions", s.admin(s.withSet(s.handleCreateSession)))
	h("PATCH "+t+rss+"/{id}/sessions/{sid}", s.admin(s.withSet(s.handleRefreshSession)))
	h("DELETE "+t+rss+"/{id}/sessions/{sid}", s.admin(s.withSet(s.handleDeleteSession)))
	h("GET "+t+rss+"/{id}/acquirablejobs", s.admin(s.withSet(s.handleAcquirableJobs)))
	h("POST "+t+rss+"/{id}/generatejitconfig", s.admin(s.withSet(s.handleScaleSetJIT)))
	h("GET "+t+agents+"/{id}", s.admin(s.handleGetAgent))
	h("GET "+t+agents, s.admin(s.handleAgentByName))
	h("DELETE "+t+agents+"/{id}", s.admin(s.handleDeleteAgent))
	h("POST "+t+rss+"/{id}/acquirejobs", s.handleAcquireJobs) // queue token
	h("GET "+queuePrefix, s.handleGetMessage)
	h("DELETE "+queuePrefix+"/{msg}", s.handleDeleteMessage)
	h("/", func(w http.ResponseWriter, r *http.Request) {
		writeActionsError(w, http.StatusNotFound, "", "Not Found")
	})
}

// serveActions is the Actions host's pipeline: faults, credential bookkeeping, the handler, and
// the BOM when configured. Requests are counted by route, for the per-job cost benchmarks.
func (s *Server) serveActions(w http.ResponseWriter, r *http.Request) {
	if s.applyFault(w, r) {
		return
	}
	_, pattern := s.act.mux.Handler(r)
	s.mu.Lock()
	s.act.calls[pattern]++
	if s.restCredential(bearer(r)) {
		s.act.leaks = append(s.act.leaks, "a GitHub credential was sent to the Actions service: "+r.Method+" "+r.URL.Path)
	}
	s.mu.Unlock()
	if s.opts.Actions.BOM {
		w = &bomWriter{ResponseWriter: w}
	}
	s.act.mux.ServeHTTP(w, r)
}

// bomWriter puts a UTF-8 BOM before the first byte of a body.
type bomWriter struct {
	http.ResponseWriter
	wrote bool
}

func (b *bomWriter) Write(p []byte) (int, error) {
	if !b.wrote {
		b.wrote = true
		if _, err := b.ResponseWriter.Write([]byte("\ufeff")); err != nil {
			return 0, err
		}
	}
	return b.ResponseWriter.Write(p)
}

// noteRESTCredential records an Actions-service token sent to the REST host.
func (s *Server) noteRESTCredential(r *http.Request) {
	v := bearer(r)
	if v == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.parseAdminToken(v); err == nil || s.queueSession(v) != nil {
		s.act.leaks = append(s.act.leaks, "an Actions-service token was sent to the REST API: "+r.Method+" "+r.URL.Path)
	}
}

// restCredential reports whether v is a token of the REST API. Callers hold s.mu.
func (s *Server) restCredential(v string) bool {
	_, ok := s.tokens[v]
	return ok
}

// CredentialLeaks lists every request that carried a credential to the wrong host. A correct
// client leaves it empty.
func (s *Server) CredentialLeaks() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.act.leaks...)
}

// ActionsCalls reports the Actions-service requests served, by route ("GET /message-queue/{set}").
func (s *Server) ActionsCalls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.act.calls))
	for k, v := range s.act.calls {
		out[k] = v
	}
	return out
}

// Exception type names (scaleset.md section 2: typeName is an assembly-qualified .NET name;
// clients match by substring). Only the session conflict's full name is confirmed; the others
// follow its pattern.
const (
	excSessionConflict = "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionConflictException, GitHub.Actions.Runtime.WebApi"
	excSetNotFound     = "GitHub.Actions.Runtime.WebApi.RunnerScaleSetNotFoundException, GitHub.Actions.Runtime.WebApi"
	excSessionExpired  = "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionExpiredException, GitHub.Actions.Runtime.WebApi"
	excSetExists       = "GitHub.Actions.Runtime.WebApi.RunnerScaleSetExistsException, GitHub.Actions.Runtime.WebApi"
	excAdmin           = "GitHub.Actions.Runtime.WebApi.RunnerAdminException, GitHub.Actions.Runtime.WebApi"
	excAgentExists     = "GitHub.DistributedTask.WebApi.AgentExistsException, GitHub.DistributedTask.WebApi"
	excAgentNotFound   = "GitHub.DistributedTask.WebApi.AgentNotFoundException, GitHub.DistributedTask.WebApi"
	excJobRunning      = "GitHub.DistributedTask.WebApi.JobStillRunningException, GitHub.DistributedTask.WebApi"
	excInvalid         = "System.ArgumentException, mscorlib"
)

// writeActionsError writes the Actions service's error body; with no type name it writes plain text.
func writeActionsError(w http.ResponseWriter, code int, typeName, msg string) {
	if typeName == "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(msg))
		return
	}
	writeActionsJSON(w, code, map[string]string{"typeName": typeName, "message": msg})
}

func writeActionsJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("ActivityId", newGUID())
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// list is the Actions service's collection shape.
type list[T any] struct {
	Count int `json:"count"`
	Value []T `json:"value"`
}

func listOf[T any](v []T) list[T] {
	if v == nil {
		v = []T{}
	}
	return list[T]{Count: len(v), Value: v}
}

// adminClaims are the admin JWT's claims: the scope it acts for and a real exp (scaleset.md
// section 1, step 4: clients read exp without verifying).
type adminClaims struct {
	Scope string `json:"scp"`
	jwt.RegisteredClaims
}

func (s *Server) newAdminToken(sc scope) (string, error) {
	now := s.now()
	c := adminClaims{Scope: string(sc), RegisteredClaims: jwt.RegisteredClaims{
		Issuer: "ghsim-actions", IssuedAt: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(s.opts.Actions.AdminTokenTTL)),
	}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(s.act.key)
}

// parseAdminToken verifies an admin JWT against the simulator's clock. Callers hold s.mu.
func (s *Server) parseAdminToken(raw string) (scope, error) {
	var c adminClaims
	_, err := jwt.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return s.act.key, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithoutClaimsValidation())
	if err != nil {
		return "", err
	}
	if c.ExpiresAt == nil || !s.now().Before(c.ExpiresAt.Time) {
		return "", errors.New("token expired")
	}
	return scope(c.Scope), nil
}

// tenantID is the path segment that names a scope in the Actions-service base URL. Callers hold s.mu.
func (s *Server) tenantID(sc scope) string {
	kind, name, _ := strings.Cut(string(sc), ":")
	switch kind {
	case "org":
		return strconv.FormatInt(s.accounts[name].id, 10)
	case "enterprise":
		return strconv.FormatInt(s.enterprises[name].id, 10)
	}
	return strconv.FormatInt(s.repos[name].id, 10)
}

type adminHandler func(w http.ResponseWriter, r *http.Request, sc scope)

// admin authenticates an admin-token call: Bearer admin JWT for the path's tenant, and the
// api-version query every Actions-service request carries (scaleset.md section 2). It runs the
// handler with s.mu held and the lazy clock work (assignment timeouts) done.
func (s *Server) admin(fn adminHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("api-version") == "" {
			writeActionsError(w, http.StatusBadRequest, excInvalid, "The api-version query parameter is required.")
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		sc, err := s.parseAdminToken(bearer(r))
		if err != nil {
			writeActionsError(w, http.StatusUnauthorized, "", "Unauthorized")
			return
		}
		if s.tenantID(sc) != r.PathValue("tid") {
			writeActionsError(w, http.StatusNotFound, "", "Not Found")
			return
		}
		s.sweepScaleSets()
		fn(w, r, sc)
	}
}

// handleRegistrationToken serves POST {repo|org}/actions/runners/registration-token: 201
// {"token","expires_at"} (scaleset.md section 1, step 2).
func (s *Server) handleRegistrationToken(w http.ResponseWriter, r *http.Request, sc scope, _ *account) {
	tok := newSecret("AABBREG")
	exp := s.now().Add(s.opts.Actions.RegTokenTTL).UTC().Truncate(time.Second)
	s.act.regs[tok] = &regToken{sc: sc, expires: exp}
	writeJSON(w, http.StatusCreated, map[string]string{"token": tok, "expires_at": exp.Format(time.RFC3339)})
}

// handleRunnerRegistration serves POST /actions/runner-registration (scaleset.md section 1, step 3):
// RemoteAuth <registration token>, a config URL naming the token's own scope; it answers the
// Actions-service base URL (with a path prefix) and an admin JWT.
func (s *Server) handleRunnerRegistration(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "RemoteAuth ")
	var body struct {
		URL         string `json:"url"`
		RunnerEvent string `json:"runner_event"`
	}
	if err := decodeBody(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := s.act.regs[strings.TrimSpace(raw)]
	if !ok || rt == nil || !s.now().Before(rt.expires) {
		writeError(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	if body.RunnerEvent != "register" {
		writeError(w, http.StatusUnprocessableEntity, `runner_event must be "register"`)
		return
	}
	if configScope(body.URL) != rt.sc {
		writeError(w, http.StatusForbidden, "The registration token does not belong to "+body.URL)
		return
	}
	tok, err := s.newAdminToken(rt.sc)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Server Error")
		return
	}
	base := s.ActionsURL() + strings.Replace(tenantPrefix, "{tid}", s.tenantID(rt.sc), 1) + "/"
	writeJSON(w, http.StatusOK, map[string]string{"url": base, "token": tok, "token_schema": "OAuthAccessToken"})
}

// configScope reads the scope of a config URL (https://github.com/{org}, /{owner}/{repo} or
// /enterprises/{enterprise});
// any host, since the simulator has no web host of its own.
func configScope(u string) scope {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	_, path, _ := strings.Cut(u[i+3:], "/")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 2 && parts[0] == "enterprises" && parts[1] != "":
		return scope("enterprise:" + strings.ToLower(parts[1]))
	case len(parts) == 1 && parts[0] != "":
		return scope("org:" + strings.ToLower(parts[0]))
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return scope("repo:" + strings.ToLower(parts[0]+"/"+parts[1]))
	}
	return ""
}

// sortedSets returns the scale sets of sc by id. Callers hold s.mu.
func (s *Server) sortedSets(sc scope) []*scaleSet {
	return byID(s.act.sets, func(ss *scaleSet) bool { return ss.sc == sc })
}
