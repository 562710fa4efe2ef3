package ghsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// docsURL is the documentation_url GitHub puts in its error bodies.
const docsURL = "https://docs.github.com/rest"

// Options configure a Server. The zero value is a simulator on 127.0.0.1 with a random port,
// the real clock and GitHub's default limits.
type Options struct {
	Addr                 string        // listen address; default "127.0.0.1:0"
	Clock                Clock         // default: the real clock
	RateLimit            int           // primary budget per token owner per hour; default 5000
	UserTokenTTL         time.Duration // device-flow access token lifetime; default 8 h (expires_in 28800)
	RefreshTokenTTL      time.Duration // default 15811200 s, as GitHub's docs state
	InstallationTokenTTL time.Duration // default 1 h
	DeviceCodeTTL        time.Duration // default 900 s
	DeviceInterval       time.Duration // minimum polling interval for the device flow; default 5 s
	Limits               Limits        // secondary limits; zero fields take GitHub's numbers
	Latency              time.Duration // added to every REST request (a round trip); SetLatency changes it
	Seed                 uint64        // seeds probabilistic faults, so a failing test replays
	Logger               *slog.Logger  // default: discard
	Actions              ActionsOptions
	// GHES plays GitHub Enterprise Server: REST under /api/v3 (APIURL), and the Actions service's
	// GHES message flow (Actions.GHES) with it.
	GHES bool
}

func (o *Options) withDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.RateLimit == 0 {
		o.RateLimit = 5000
	}
	def(&o.UserTokenTTL, 8*time.Hour)
	def(&o.RefreshTokenTTL, 15811200*time.Second)
	def(&o.InstallationTokenTTL, time.Hour)
	def(&o.DeviceCodeTTL, 900*time.Second)
	def(&o.DeviceInterval, 5*time.Second)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Actions.GHES = o.Actions.GHES || o.GHES
	o.Actions.withDefaults()
	o.Limits.withDefaults()
}

// Server is one simulated GitHub. All state sits behind mu.
type Server struct {
	opts Options
	log  *slog.Logger
	ln   net.Listener
	http *http.Server
	api  *http.ServeMux // authenticated REST API
	priv *http.ServeMux // /_ghsim/ (fake runner, downloads, admin) and /login/ (OAuth)

	wg       sync.WaitGroup
	stop     context.CancelFunc
	started  bool
	closed   bool
	delivery chan delivery

	mu            sync.Mutex
	clock         Clock
	rng           *rand.Rand
	nextID        int64
	accounts      map[string]*account // lower-case login
	repos         map[string]*repo    // lower-case full name
	groups        map[int64]*runnerGroup
	runners       map[int64]*runner
	registrations []*Registration
	jobs          map[int64]*job
	runs          map[int64]*run
	tokens        map[string]*token
	buckets       map[string]*bucket
	apps          map[int64]*app
	installations map[int64]*installation
	oauthClients  map[string]bool
	devices       map[string]*deviceCode // by device_code
	refresh       map[string]*refreshToken
	hooks         []*hook
	deliveries    []Delivery
	faults        []*faultRule
	runnerFaults  map[string]string // runner name -> fault
	packages      []Package
	act           actionsState   // the Actions service (actions.go)
	requests      map[string]int // "METHOD /route/pattern" -> count
	limitAnswers  map[string]int // Limit* -> refusals
	latency       time.Duration
	enterprises   map[string]*enterprise // lower-case slug -> enterprise (enterprise.go); nil until AddEnterprise
}

// New binds the listener (so URL is known at once) but serves nothing until Start.
func New(opts Options) (*Server, error) {
	opts.withDefaults()
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("ghsim: listen on %s: %w (pick a free address with --listen)", opts.Addr, err)
	}
	s := &Server{
		opts: opts, log: opts.Logger, ln: ln, clock: opts.Clock,
		rng:      rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		nextID:   1000,
		accounts: map[string]*account{}, repos: map[string]*repo{}, groups: map[int64]*runnerGroup{},
		runners: map[int64]*runner{}, jobs: map[int64]*job{}, runs: map[int64]*run{},
		tokens: map[string]*token{}, buckets: map[string]*bucket{}, apps: map[int64]*app{},
		installations: map[int64]*installation{}, oauthClients: map[string]bool{},
		devices: map[string]*deviceCode{}, refresh: map[string]*refreshToken{},
		runnerFaults: map[string]string{}, delivery: make(chan delivery, 1024),
		requests: map[string]int{}, limitAnswers: map[string]int{}, latency: opts.Latency,
	}
	if err := s.newActions(); err != nil {
		_ = ln.Close()
		return nil, err
	}
	s.groups[1] = &runnerGroup{id: 1, name: "Default"}
	s.api = http.NewServeMux()
	s.priv = http.NewServeMux()
	s.routes()
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// Start serves until Close or until ctx is cancelled.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return errors.New("ghsim: Start called twice or after Close")
	}
	s.started = true
	ctx, s.stop = context.WithCancel(ctx)
	s.act.done = ctx.Done()
	// Added under the lock that publishes started: a Close that sees started must never Wait
	// before this Add (the race detector reports exactly that).
	s.wg.Add(5)
	s.mu.Unlock()
	for _, srv := range []struct {
		h  *http.Server
		ln net.Listener
	}{{s.http, s.ln}, {s.act.http, s.act.ln}} {
		go func() {
			defer s.wg.Done()
			if err := srv.h.Serve(srv.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("ghsim: serve failed", "err", err)
			}
		}()
		go func() {
			defer s.wg.Done()
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := srv.h.Shutdown(sctx); err != nil {
				_ = srv.h.Close()
			}
		}()
	}
	go func() {
		defer s.wg.Done()
		s.deliverLoop(ctx)
	}()
	return nil
}

// Close stops serving and waits for the server's goroutines. Safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()
	if !started {
		return errors.Join(s.ln.Close(), s.act.ln.Close())
	}
	s.stop()
	s.wg.Wait()
	return nil
}

// URL is the simulator's origin (http://127.0.0.1:port), without a trailing slash: the REST API's
// base URL too unless GHES (then APIURL). Paths are GitHub's own (/repos/...), so a go-github
// client needs BaseURL = APIURL()+"/".
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// SetClock replaces the simulator's clock.
func (s *Server) SetClock(c Clock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = c
}

func (s *Server) now() time.Time { return s.clock.Now() }

func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

// ServeHTTP is the request pipeline: faults, private routes, OAuth, then the REST API
// with authentication, rate limits and ETags.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.ghesPath(w, r) {
		return
	}
	// Faults reach package downloads (a flaky CDN) but never the admin or fake-runner API.
	private := strings.HasPrefix(r.URL.Path, "/_ghsim/") && !strings.HasPrefix(r.URL.Path, "/_ghsim/downloads/")
	if !strings.HasPrefix(r.URL.Path, "/_ghsim/") {
		mux := s.api
		if strings.HasPrefix(r.URL.Path, "/login/") {
			mux = s.priv
		}
		s.mu.Lock()
		s.countRequest(mux, r)
		s.mu.Unlock()
	}
	if !private && s.applyFault(w, r) {
		return
	}
	if strings.HasPrefix(r.URL.Path, "/_ghsim/") {
		s.priv.ServeHTTP(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/login/") {
		s.priv.ServeHTTP(w, r)
		return
	}
	s.noteRESTCredential(r)
	if r.URL.Path == runnerRegistrationPath {
		s.handleRunnerRegistration(w, r) // RemoteAuth, not a REST credential
		return
	}
	s.serveAPI(w, r)
}

// recorder buffers a handler's answer so the pipeline can add the ETag and rate headers.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (rec *recorder) Header() http.Header { return rec.header }
func (rec *recorder) WriteHeader(code int) {
	if rec.code == 0 {
		rec.code = code
	}
}
func (rec *recorder) Write(b []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	return rec.body.Write(b)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes GitHub's error body: {"message": ..., "documentation_url": ...}.
func writeError(w http.ResponseWriter, code int, msg string) { writeErrorDoc(w, code, msg, docsURL) }

func writeErrorDoc(w http.ResponseWriter, code int, msg, doc string) {
	writeJSON(w, code, map[string]string{"message": msg, "documentation_url": doc})
}

// GitHub's documentation_url values for rate limiting; clients (go-github) key on the suffix.
const (
	docsPrimaryLimit   = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit"
	docsSecondaryLimit = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)

func decodeBody(r *http.Request, v any) error {
	if r.Body == nil {
		return errors.New("empty body")
	}
	return json.NewDecoder(r.Body).Decode(v)
}

func pathID(r *http.Request, name string) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	return id, err == nil
}

// byID returns the values of m (keyed by their ids) that keep accepts (nil: all), in id order:
// GitHub lists objects oldest first, and a map iterates in no order at all.
func byID[T any](m map[int64]T, keep func(T) bool) []T {
	var out []T
	for _, id := range slices.Sorted(maps.Keys(m)) {
		if v := m[id]; keep == nil || keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// byPathID finds the object the path's {id} names in m, or answers 404 Not Found, as GitHub does
// for one that does not exist or that the caller may not see (visible says which), and returns nil.
func byPathID[T any](w http.ResponseWriter, r *http.Request, m map[int64]*T, visible func(*T) bool) *T {
	id, _ := pathID(r, "id")
	v := m[id]
	if v == nil || !visible(v) {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil
	}
	return v
}
