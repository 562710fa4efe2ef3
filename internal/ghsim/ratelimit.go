package ghsim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

// bucket is one primary rate-limit window ("core"), shared by every token of one owner, and that
// account's secondary limits (limits.go).
type bucket struct {
	limit    int
	used     int
	reset    time.Time
	resource string // x-ratelimit-resource; "" = core

	sec secondary
	reg *bucket // actions_runner_registration, made on first use
}

func (b *bucket) roll(now time.Time) {
	if !now.Before(b.reset) {
		b.used = 0
		b.reset = now.Add(time.Hour).Truncate(time.Second)
	}
}

func (b *bucket) remaining() int { return max(b.limit-b.used, 0) }

// bucketFor returns the named bucket, creating it with the configured limit. Callers hold s.mu.
func (s *Server) bucketFor(key string) *bucket {
	b, ok := s.buckets[key]
	if !ok {
		limit := s.opts.RateLimit
		if key == "anon" {
			limit = 60
		}
		b = &bucket{limit: limit}
		s.buckets[key] = b
	}
	return b
}

func setRateHeaders(h http.Header, b *bucket) {
	h.Set("X-Ratelimit-Limit", strconv.Itoa(b.limit))
	h.Set("X-Ratelimit-Remaining", strconv.Itoa(b.remaining()))
	h.Set("X-Ratelimit-Used", strconv.Itoa(b.used))
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(b.reset.Unix(), 10))
	res := b.resource
	if res == "" {
		res = "core"
	}
	h.Set("X-Ratelimit-Resource", res)
}

// RateUsage reports the primary budget of the owner of tok (limit, used, reset), for assertions
// such as "100 idle polls cost nothing".
func (s *Server) RateUsage(tok string) (limit, used int, reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tok]
	if !ok {
		return 0, 0, time.Time{}
	}
	t.bucket.roll(s.now())
	return t.bucket.limit, t.bucket.used, t.bucket.reset
}

// ExhaustBudget spends the whole current window of tok's owner: the next request gets 403 with
// x-ratelimit-remaining 0 until x-ratelimit-reset.
func (s *Server) ExhaustBudget(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[tok]; ok {
		t.bucket.roll(s.now())
		t.bucket.used = t.bucket.limit
	}
}

// serveAPI authenticates, enforces the primary budget and the secondary limits (limits.go), waits
// out the injected round-trip latency, runs the handler into a buffer, then adds the ETag, answers
// 304 to a matching If-None-Match (free against the primary budget, as on GitHub; its secondary
// points were charged at admission) and sets x-ratelimit-*.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	now := s.now()
	p, msg := s.authenticate(r)
	b := s.bucketFor("anon")
	if p != nil {
		b = p.bucket
	}
	b.roll(now)
	free := r.URL.Path == "/rate_limit"
	if p == nil {
		setRateHeaders(w.Header(), b)
		s.mu.Unlock()
		writeError(w, http.StatusUnauthorized, msg)
		return
	}
	setScopeHeader(w.Header(), p)
	if !free && b.remaining() == 0 && !isRegistration(r) {
		s.limitAnswers[LimitPrimary]++
		setRateHeaders(w.Header(), b)
		s.mu.Unlock()
		writeErrorDoc(w, http.StatusForbidden, "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID.", docsPrimaryLimit)
		return
	}
	if f := s.admit(b, r, now); f != nil {
		s.limitAnswers[f.kind]++
		s.mu.Unlock()
		writeRefusal(w, f, b)
		return
	}
	latency := s.latency
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		b.release()
		s.mu.Unlock()
	}()
	sleepCtx(r.Context(), latency)

	rec := &recorder{header: http.Header{}}
	s.api.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	counted := !free
	if r.Method == http.MethodGet && rec.code == http.StatusOK {
		sum := sha256.Sum256(rec.body.Bytes())
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		rec.header.Set("ETag", etag)
		if etagMatches(r.Header.Get("If-None-Match"), etag) {
			rec.code = http.StatusNotModified
			rec.body.Reset()
			counted = false
		}
	}
	s.mu.Lock()
	rate := b
	if isRegistration(r) && s.opts.Limits.RegistrationsPerHour > 0 {
		rate = b.registrations(s.opts.Limits.RegistrationsPerHour)
	}
	rate.roll(s.now())
	if counted {
		rate.used++
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	setRateHeaders(w.Header(), rate)
	s.mu.Unlock()
	w.WriteHeader(rec.code)
	_, _ = w.Write(rec.body.Bytes())
}

func etagMatches(header, etag string) bool {
	for _, c := range strings.Split(header, ",") {
		c = strings.TrimPrefix(strings.TrimSpace(c), "W/")
		if c == etag || c == "*" {
			return true
		}
	}
	return false
}

// handleRateLimit serves GET /rate_limit; it costs nothing, as on GitHub.
func (s *Server) handleRateLimit(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	s.mu.Lock()
	b := p.bucket
	b.roll(s.now())
	core := &github.Rate{Limit: b.limit, Remaining: b.remaining(), Reset: github.Timestamp{Time: b.reset}}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, struct {
		Resources *github.RateLimits `json:"resources"`
		Rate      *github.Rate       `json:"rate"`
	}{&github.RateLimits{Core: core}, core})
}
