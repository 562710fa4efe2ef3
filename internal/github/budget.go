package github

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rate is GitHub's last word on one rate-limit resource, from the x-ratelimit-* headers.
type Rate struct {
	Limit     int
	Remaining int
	Used      int
	Reset     time.Time
}

// Budget tracks the rate limits GitHub reports on every response, per credential and resource
// ("core", ...), plus any secondary-limit pause. It is the only authority on when the next request
// may be sent: the transport asks it before every request and refuses to send one before a reset.
// Budgets are kept per credential because GitHub counts them so: with a GitHub App on several
// installations, one installation running dry must not pause the others.
type Budget struct {
	clock Clock

	mu        sync.Mutex
	rates     map[string]map[string]Rate // credential id -> resource -> rate
	last      string                     // credential of the latest response, for Rates/Rate
	pauseTill time.Time                  // secondary limit: no request of any kind before this
}

// maxCredentials bounds how many credentials' budgets are remembered.
const maxCredentials = 64

// NewBudget returns an empty budget on clock.
func NewBudget(clock Clock) *Budget {
	return &Budget{clock: clock, rates: map[string]map[string]Rate{}}
}

// Rates returns a copy of every resource's last known state for the credential used last.
func (b *Budget) Rates() map[string]Rate {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]Rate, len(b.rates[b.last]))
	for k, v := range b.rates[b.last] {
		out[k] = v
	}
	return out
}

// Rate returns one resource's last known state for the credential used last.
func (b *Budget) Rate(resource string) (Rate, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rates[b.last][resource]
	return r, ok
}

func (b *Budget) blocked(id, resource string) (time.Time, bool, bool) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Before(b.pauseTill) {
		return b.pauseTill, true, true
	}
	r, ok := b.rates[id][resource]
	if ok && r.Remaining <= 0 && r.Limit > 0 && now.Before(r.Reset) {
		return r.Reset, false, true
	}
	return time.Time{}, false, false
}

// observe records the headers of a response made with credential id.
func (b *Budget) observe(id string, h http.Header) {
	rem, err := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	if err != nil {
		return
	}
	res := h.Get("X-RateLimit-Resource")
	if res == "" {
		res = "core"
	}
	r := Rate{Remaining: rem}
	r.Limit, _ = strconv.Atoi(h.Get("X-RateLimit-Limit"))
	r.Used, _ = strconv.Atoi(h.Get("X-RateLimit-Used"))
	if sec, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
		r.Reset = time.Unix(sec, 0)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rates[id] == nil {
		// Installation tokens rotate hourly: forget old credentials rather than grow for ever.
		for old := range b.rates {
			if len(b.rates) < maxCredentials {
				break
			}
			if old != b.last {
				delete(b.rates, old)
			}
		}
		b.rates[id] = map[string]Rate{}
	}
	b.rates[id][res] = r
	b.last = id
}

// pause records a secondary limit.
func (b *Budget) pause(until time.Time) {
	b.mu.Lock()
	if until.After(b.pauseTill) {
		b.pauseTill = until
	}
	b.mu.Unlock()
}

// limited decides whether a 403/429 is a rate limit and until when, following GitHub's rules:
// remaining 0 waits for x-ratelimit-reset; otherwise a secondary limit waits retry-after seconds,
// or a minute when GitHub gives no time.
func (b *Budget) limited(status int, h http.Header, body []byte) (*RateLimitedError, bool) {
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return nil, false
	}
	now := b.clock.Now()
	res := h.Get("X-RateLimit-Resource")
	if res == "" {
		res = "core"
	}
	retryAfter, hasRA := parseRetryAfter(h.Get("Retry-After"), now)
	msg := strings.ToLower(string(body))
	secondary := hasRA || strings.Contains(msg, "secondary rate limit") || strings.Contains(msg, "abuse")
	if h.Get("X-RateLimit-Remaining") == "0" && !hasRA {
		if sec, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return &RateLimitedError{Resource: res, Until: time.Unix(sec, 0)}, true
		}
		secondary = true
	}
	if !secondary && status == http.StatusForbidden {
		return nil, false // a permission refusal
	}
	until := now.Add(time.Minute)
	if hasRA {
		until = retryAfter
	}
	b.pause(until)
	return &RateLimitedError{Resource: "secondary", Until: until, Secondary: true}, true
}

// parseRetryAfter reads Retry-After as seconds (what GitHub sends) or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && s >= 0 {
		return now.Add(time.Duration(s) * time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return t, true
	}
	return time.Time{}, false
}
