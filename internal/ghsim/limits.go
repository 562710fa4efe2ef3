package ghsim

import (
	"context"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Limits are GitHub's secondary rate limits (GitHub's "Rate limits for the REST API" page; copied
// with provenance into testdata/rate-limits.md). A zero field takes GitHub's number; a negative one
// turns that limit off (benchmarks that measure offered load do this, tests never should).
//
// Where GitHub's text leaves a point open the simulator takes the stricter reading
// (docs/simulator.md): the points limit applies across every REST endpoint of an account rather
// than per endpoint, 304 answers cost their points, GET /rate_limit costs a point, and the window
// is a sliding 60 s (any 60 s, not calendar minutes).
type Limits struct {
	PointsPerMinute      int // secondary-limit points per account per sliding minute; default 900
	Concurrent           int // REST requests in flight per account; default 100
	ContentPerMinute     int // content-creating requests per account per minute; default 80
	ContentPerHour       int // and per hour; default 500
	RegistrationsPerHour int // the actions_runner_registration resource (JIT configs); default 10,000
}

func (l *Limits) withDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.PointsPerMinute, 900)
	def(&l.Concurrent, 100)
	def(&l.ContentPerMinute, 80)
	def(&l.ContentPerHour, 500)
	def(&l.RegistrationsPerHour, 10000)
}

// Kinds of limit answers, as LimitAnswers and GET /_ghsim/admin/limits count them.
const (
	LimitPoints       = "points"
	LimitConcurrent   = "concurrent"
	LimitContent      = "content"
	LimitPrimary      = "primary"
	LimitRegistration = "registration"
)

// resourceRegistration is the x-ratelimit-resource GitHub reports JIT registrations under.
const resourceRegistration = "actions_runner_registration"

// secondary is one account's secondary-limit state. Callers hold s.mu.
type secondary struct {
	points   []stamp // admitted requests of the last minute, oldest first
	sum      int     // points in points
	content  []time.Time
	inFlight int
	peak     int // the most points ever inside one sliding minute
}

type stamp struct {
	at  time.Time
	pts int
}

func (sec *secondary) prune(now time.Time) {
	i := 0
	for i < len(sec.points) && !sec.points[i].at.After(now.Add(-time.Minute)) {
		sec.sum -= sec.points[i].pts
		i++
	}
	sec.points = sec.points[i:]
	j := 0
	for j < len(sec.content) && !sec.content[j].After(now.Add(-time.Hour)) {
		j++
	}
	sec.content = sec.content[j:]
}

// pointsWait is how long until the window has room for cost more points.
func (sec *secondary) pointsWait(now time.Time, cost, limit int) time.Duration {
	over := sec.sum + cost - limit
	for _, st := range sec.points {
		over -= st.pts
		if over <= 0 {
			return st.at.Add(time.Minute).Sub(now)
		}
	}
	return time.Minute
}

func (sec *secondary) contentLastMinute(now time.Time) (n int, oldest time.Time) {
	for _, at := range sec.content {
		if at.After(now.Add(-time.Minute)) {
			if n == 0 {
				oldest = at
			}
			n++
		}
	}
	return n, oldest
}

// pointCost is GitHub's published cost: 1 for GET, HEAD and OPTIONS, 5 for mutative requests.
func pointCost(method string) int {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return 1
	}
	return 5
}

// isRegistration reports whether r is a JIT registration, which GitHub counts under its own
// resource (actions_runner_registration) and not as content creation.
func isRegistration(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/actions/runners/generate-jitconfig")
}

// refusal is a limit answer: the status, message and retry-after GitHub would send.
type refusal struct {
	kind  string
	code  int
	retry time.Duration
}

// admit applies the secondary limits to a request of account b and, if it passes, charges it.
// Refused requests are not charged: the retry-after then says exactly when the request would pass.
// Callers hold s.mu.
func (s *Server) admit(b *bucket, r *http.Request, now time.Time) *refusal {
	l, sec := s.opts.Limits, &b.sec
	sec.prune(now)
	if l.Concurrent > 0 && sec.inFlight >= l.Concurrent {
		// GitHub publishes no wait for this one; the one-minute rule applies, and saying so
		// explicitly keeps clients from guessing.
		return &refusal{kind: LimitConcurrent, code: http.StatusTooManyRequests, retry: time.Minute}
	}
	cost := pointCost(r.Method)
	if l.PointsPerMinute > 0 && sec.sum+cost > l.PointsPerMinute {
		return &refusal{kind: LimitPoints, code: http.StatusForbidden, retry: sec.pointsWait(now, cost, l.PointsPerMinute)}
	}
	content := cost > 1 && !isRegistration(r)
	if content {
		n, oldest := sec.contentLastMinute(now)
		if l.ContentPerMinute > 0 && n >= l.ContentPerMinute {
			return &refusal{kind: LimitContent, code: http.StatusForbidden, retry: oldest.Add(time.Minute).Sub(now)}
		}
		if l.ContentPerHour > 0 && len(sec.content) >= l.ContentPerHour {
			return &refusal{kind: LimitContent, code: http.StatusForbidden, retry: sec.content[0].Add(time.Hour).Sub(now)}
		}
	}
	if isRegistration(r) && l.RegistrationsPerHour > 0 {
		rb := b.registrations(l.RegistrationsPerHour)
		rb.roll(now)
		if rb.remaining() == 0 {
			return &refusal{kind: LimitRegistration, code: http.StatusForbidden, retry: rb.reset.Sub(now)}
		}
	}
	sec.points = append(sec.points, stamp{at: now, pts: cost})
	sec.sum += cost
	sec.peak = max(sec.peak, sec.sum)
	if content {
		sec.content = append(sec.content, now)
	}
	sec.inFlight++
	return nil
}

// release ends an admitted request's time in flight. Callers hold s.mu.
func (b *bucket) release() { b.sec.inFlight-- }

// registrations is the account's actions_runner_registration bucket. Callers hold s.mu.
func (b *bucket) registrations(limit int) *bucket {
	if b.reg == nil {
		b.reg = &bucket{limit: limit, resource: resourceRegistration}
	}
	return b.reg
}

// writeRefusal answers a refused request as GitHub does. A spent registration resource is a primary
// limit: remaining 0 and its reset. A secondary limit is 403 or 429 with retry-after in whole
// seconds (rounded up, at least 1), the primary rate headers, and GitHub's message.
func writeRefusal(w http.ResponseWriter, f *refusal, rate *bucket) {
	if f.kind == LimitRegistration {
		setRateHeaders(w.Header(), rate.reg)
		writeErrorDoc(w, f.code, "API rate limit exceeded for the actions_runner_registration resource.", docsPrimaryLimit)
		return
	}
	secs := int((f.retry + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	setRateHeaders(w.Header(), rate)
	writeErrorDoc(w, f.code, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.", docsSecondaryLimit)
}

// countRequest records one request by method and route pattern ("GET /repos/{owner}/{repo}/actions/runs").
// Callers hold s.mu.
func (s *Server) countRequest(mux *http.ServeMux, r *http.Request) {
	_, pat := mux.Handler(r)
	if _, p, ok := strings.Cut(pat, " "); ok {
		pat = p
	}
	if pat == "" || pat == "/" {
		pat = "(unrouted)"
	}
	s.requests[r.Method+" "+pat]++
}

// Requests returns how many requests each route received: {"GET /repos/{owner}/{repo}/actions/runs": 12}.
// Every request to GitHub's API and OAuth paths counts, refused ones included.
func (s *Server) Requests() map[string]int { return s.copyCounts(s.requests) }

// LimitAnswers returns how many requests each limit refused (LimitPoints, LimitConcurrent,
// LimitContent, LimitPrimary, LimitRegistration).
func (s *Server) LimitAnswers() map[string]int { return s.copyCounts(s.limitAnswers) }

func (s *Server) copyCounts(m map[string]int) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(m)
}

// PeakPointsPerMinute is the most secondary-limit points any account spent inside one sliding minute.
func (s *Server) PeakPointsPerMinute() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	peak := 0
	for _, b := range s.buckets {
		peak = max(peak, b.sec.peak)
	}
	return peak
}

// SetLatency makes every REST request take d longer: a round trip to a distant GitHub. The request
// counts as in flight meanwhile, as it would at GitHub.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// SetRepoForbidden makes every REST call on repository fullName answer 403 (as GitHub does for a
// repository an App installation or fine-grained token was not granted Actions on) until cleared.
func (s *Server) SetRepoForbidden(fullName string, forbidden bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[strings.ToLower(fullName)]
	if rp == nil {
		return errUnknown("repository", fullName)
	}
	rp.forbidden = forbidden
	return nil
}
