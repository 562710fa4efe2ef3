package ghsim

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// FaultKind names what an injected fault does.
type FaultKind string

// The fault kinds. The webhook kinds apply to deliveries; the others to API and OAuth requests.
const (
	FaultLatency          FaultKind = "latency"           // delay by Latency, then serve normally
	FaultStatus           FaultKind = "status"            // answer Status (default 502) with GitHub's error body
	FaultRateLimited      FaultKind = "429"               // 429 secondary limit with retry-after
	FaultSecondary        FaultKind = "403-secondary"     // 403 secondary limit with retry-after
	FaultBudgetExhausted  FaultKind = "budget-exhausted"  // 403 primary limit: remaining 0, reset in RetryAfter
	FaultRevokedToken     FaultKind = "401-revoked"       // 401 Bad credentials
	FaultConnectionReset  FaultKind = "connection-reset"  // hijack and reset the TCP connection
	FaultWebhookDrop      FaultKind = "webhook-drop"      // the delivery is never sent
	FaultWebhookDuplicate FaultKind = "webhook-duplicate" // the delivery is sent twice, same X-GitHub-Delivery
)

// Fault selects requests and says what to do to them.
type Fault struct {
	Method      string        `json:"method,omitempty"`      // e.g. "GET"; "" = any
	Path        string        `json:"path,omitempty"`        // path.Match pattern ("/repos/*/*/actions/runs"), a prefix ending "/**", or "" = global; for webhook kinds, the action ("queued")
	Kind        FaultKind     `json:"kind"`                  // what to do
	Status      int           `json:"status,omitempty"`      // for FaultStatus (default 502); 429 turns FaultBudgetExhausted into a 429
	Latency     time.Duration `json:"latency,omitempty"`     // for FaultLatency
	RetryAfter  time.Duration `json:"retry_after,omitempty"` // retry-after for secondary limits; time to reset for budget exhaustion (default 60 s)
	Count       int           `json:"count,omitempty"`       // fire this many times, then retire; 0 = until removed
	Probability float64       `json:"probability,omitempty"` // chance to fire per matching request; 0 = always
}

type faultRule struct {
	id   int64
	f    Fault
	hits int
}

// AddFault installs f and returns its id for RemoveFault and FaultHits.
func (s *Server) AddFault(f Fault) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &faultRule{id: s.newID(), f: f}
	s.faults = append(s.faults, r)
	return r.id
}

// RemoveFault uninstalls the fault id.
func (s *Server) RemoveFault(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.faults {
		if r.id == id {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
			return
		}
	}
}

// ClearFaults uninstalls every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// FaultHits reports how many times fault id fired.
func (s *Server) FaultHits(id int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.faults {
		if r.id == id {
			return r.hits
		}
	}
	return 0
}

func pathMatches(pattern, p string) bool {
	if pattern == "" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "/**"); ok {
		return p == prefix || strings.HasPrefix(p, prefix+"/")
	}
	ok, _ := path.Match(pattern, p)
	return ok
}

func isWebhookKind(k FaultKind) bool { return k == FaultWebhookDrop || k == FaultWebhookDuplicate }

// pickFault returns the first installed fault that fires for (method, target, webhook), counting
// the hit. Callers hold s.mu.
func (s *Server) pickFault(method, target string, webhook bool) (Fault, bool) {
	for _, r := range s.faults {
		f := r.f
		if isWebhookKind(f.Kind) != webhook || (f.Count > 0 && r.hits >= f.Count) {
			continue
		}
		if (f.Method != "" && !strings.EqualFold(f.Method, method)) || !pathMatches(f.Path, target) {
			continue
		}
		if f.Probability > 0 && s.rng.Float64() >= f.Probability {
			continue
		}
		r.hits++
		return f, true
	}
	return Fault{}, false
}

// maxLatentBody bounds the request body a latency fault holds while it waits (REST bodies are small).
const maxLatentBody = 1 << 20

// applyFault plays the fault selected for r, if any; it reports whether the request was answered.
func (s *Server) applyFault(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	f, ok := s.pickFault(r.Method, r.URL.Path, false)
	now := s.now()
	var rate *bucket // API answers carry x-ratelimit-* even when a fault writes them
	if ok && !strings.HasPrefix(r.URL.Path, "/login/") && !strings.HasPrefix(r.URL.Path, "/_ghsim/") {
		b := s.bucketFor("anon")
		if p, _ := s.authenticate(r); p != nil {
			b = p.bucket
		}
		b.roll(now)
		c := *b
		rate = &c
	}
	s.mu.Unlock()
	if !ok {
		return false
	}
	if rate != nil && f.Kind != FaultLatency && f.Kind != FaultConnectionReset {
		setRateHeaders(w.Header(), rate)
	}
	retry := strconv.Itoa(int(f.RetryAfter.Seconds()))
	switch f.Kind {
	case FaultLatency:
		// GitHub serves a request it has received whether or not the client still waits for the
		// answer (a JIT registration whose caller gave up still appears): the body is read now and
		// the request served after the delay even if the client has gone; only a stop ends it.
		if r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxLatentBody))
			if err != nil {
				return true // the client went before sending the whole request: nothing was received
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		t := time.NewTimer(f.Latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.act.done:
			return true
		}
		return false
	case FaultStatus:
		code := f.Status
		if code == 0 {
			code = http.StatusBadGateway
		}
		writeError(w, code, http.StatusText(code))
	case FaultRateLimited, FaultSecondary:
		code := http.StatusForbidden
		if f.Kind == FaultRateLimited {
			code = http.StatusTooManyRequests
		}
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", retry)
		}
		writeErrorDoc(w, code, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", docsSecondaryLimit)
	case FaultBudgetExhausted:
		wait := f.RetryAfter
		if wait <= 0 {
			wait = time.Minute
		}
		limit := strconv.Itoa(s.opts.RateLimit)
		h := w.Header()
		h.Set("X-Ratelimit-Limit", limit)
		h.Set("X-Ratelimit-Remaining", "0")
		h.Set("X-Ratelimit-Used", limit)
		h.Set("X-Ratelimit-Reset", strconv.FormatInt(now.Add(wait).Unix(), 10))
		h.Set("X-Ratelimit-Resource", "core")
		code := http.StatusForbidden
		if f.Status == http.StatusTooManyRequests {
			code = f.Status
		}
		writeErrorDoc(w, code, "API rate limit exceeded for user ID 1.", docsPrimaryLimit)
	case FaultRevokedToken:
		writeError(w, http.StatusUnauthorized, "Bad credentials")
	case FaultConnectionReset:
		resetConnection(w)
	default:
		return false
	}
	return true
}

// resetConnection hijacks the connection and closes it with SO_LINGER 0, so the client sees a
// reset rather than a clean EOF.
func resetConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // net/http aborts the connection
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
