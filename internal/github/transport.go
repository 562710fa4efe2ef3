package github

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/internal/github/auth"
)

// RequestInfo is what the observer hook learns about each request sent to GitHub.
type RequestInfo struct {
	Endpoint    string // template, e.g. "GET /repos/{owner}/{repo}/actions/runs"
	Status      int    // 0 when no response arrived
	Duration    time.Duration
	NotModified bool // a 304 answered from the ETag cache (costs no budget)
}

type ctxKey int

const (
	endpointKey ctxKey = iota
	ownerKey
	targetKey
)

// WithTarget marks ctx as working for the named target, so a successful answer to a call made
// with it is reported to Options.TargetContacted.
func WithTarget(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, targetKey, name)
}

func withEndpoint(ctx context.Context, ep string) context.Context {
	return context.WithValue(ctx, endpointKey, ep)
}

func withOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey, owner)
}

var idSegment = regexp.MustCompile(`/\d+(/|$)`)

// endpointOf labels a request: the caller's template when set, else the path with ids elided
// (token renewals and JWT lookups made inside ghinstallation).
func endpointOf(req *http.Request) string {
	if ep, _ := req.Context().Value(endpointKey).(string); ep != "" {
		return ep
	}
	return req.Method + " " + idSegment.ReplaceAllString(req.URL.Path, "/{id}$1")
}

// meter is the transport closest to the wire: it refuses to send while the budget says wait,
// records x-ratelimit-* headers, turns rate-limit answers into *RateLimitedError, and reports
// every request to the observer. It strips the rate headers afterwards so go-github, which
// judges resets by the real wall clock, never second-guesses the Budget's injected clock.
type meter struct {
	next      http.RoundTripper
	budget    *Budget
	clock     Clock
	observe   func(RequestInfo)
	contacted func(time.Time)
	// targetContacted is told of a successful answer to a call made under WithTarget.
	targetContacted func(target string, at time.Time)
}

var rateHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Used", "X-RateLimit-Reset", "X-RateLimit-Resource"}

func (m *meter) RoundTrip(req *http.Request) (*http.Response, error) {
	id := credentialID(req)
	if until, secondary, blocked := m.budget.blocked(id, "core"); blocked {
		closeBody(req)
		res := "core"
		if secondary {
			res = "secondary"
		}
		return nil, &RateLimitedError{Resource: res, Until: until, Secondary: secondary}
	}
	start := m.clock.Now()
	resp, err := m.next.RoundTrip(req)
	info := RequestInfo{Endpoint: endpointOf(req), Duration: m.clock.Now().Sub(start)}
	if err != nil {
		m.report(info)
		return nil, err
	}
	info.Status = resp.StatusCode
	info.NotModified = resp.StatusCode == http.StatusNotModified
	m.budget.observe(id, resp.Header)
	if resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if rl, ok := m.budget.limited(resp.StatusCode, resp.Header, body); ok {
			m.report(info)
			return nil, rl
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	if resp.StatusCode < 300 || resp.StatusCode == http.StatusNotModified {
		now := m.clock.Now()
		if m.contacted != nil {
			m.contacted(now)
		}
		if t, _ := req.Context().Value(targetKey).(string); t != "" && m.targetContacted != nil {
			m.targetContacted(t, now)
		}
	}
	for _, h := range rateHeaders {
		resp.Header.Del(h)
	}
	m.report(info)
	return resp, nil
}

// credentialID names the request's credential for the Budget without keeping the secret: a hash.
func credentialID(req *http.Request) string {
	a := req.Header.Get("Authorization")
	if a == "" {
		return ""
	}
	if strings.Count(a, ".") == 2 { // an App JWT: new every few minutes, one App budget behind them all
		return "app-jwt"
	}
	sum := sha256.Sum256([]byte(a))
	return string(sum[:8])
}

func (m *meter) report(info RequestInfo) {
	if m.observe != nil {
		m.observe(info)
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// etagCache makes every GET conditional: it remembers the ETag and body of the last 200 per URL
// and credential, sends If-None-Match, and answers a 304 (which GitHub does not charge) with the
// remembered body. Keying by credential keeps one token's view from being served to another.
// It holds the working set, however many URLs that is: the only bound is maxBytes (least
// recently used entries go first). A count bound evicted live entries at 1,400 targets (4,096
// URLs), and each eviction costs a full, charged read (issue 16: 23,142 budget/h idle).
type etagCache struct {
	next     http.RoundTripper
	maxBytes int // entries in total, by entrySize

	mu      sync.Mutex
	entries map[[32]byte]*list.Element // of *cached
	lru     *list.List                 // most recently used first
	bytes   int
}

type cached struct {
	key    [32]byte
	etag   string
	header http.Header // only what readers of the body use (keptHeaders)
	body   []byte
}

// keptHeaders are the headers a cached answer keeps: go-github reads Link (pagination) and the
// content type; rate headers are the meter's and are never served from the cache.
var keptHeaders = []string{"Content-Type", "Link", "ETag"}

// entrySize counts an entry's memory: its body's buffer, its headers and a fixed overhead.
func entrySize(e *cached) int {
	n := cap(e.body) + len(e.etag) + 160
	for k, vs := range e.header {
		n += len(k)
		for _, v := range vs {
			n += len(v)
		}
	}
	return n
}

func newETagCache(next http.RoundTripper, maxBytes int) *etagCache {
	return &etagCache{next: next, maxBytes: maxBytes, entries: map[[32]byte]*list.Element{}, lru: list.New()}
}

func (c *etagCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return c.next.RoundTrip(req)
	}
	key := sha256.Sum256([]byte(req.URL.String() + "\x00" + req.Header.Get("Authorization")))
	c.mu.Lock()
	var hit *cached
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		hit = el.Value.(*cached)
	}
	c.mu.Unlock()
	if hit != nil {
		req = req.Clone(req.Context())
		req.Header.Set("If-None-Match", hit.etag)
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	countRead(req.Context(), resp.StatusCode == http.StatusNotModified && hit != nil)
	switch {
	case resp.StatusCode == http.StatusNotModified && hit != nil:
		resp.Body.Close()
		return &http.Response{
			Status: "200 OK", StatusCode: http.StatusOK, Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
			Header: hit.header.Clone(), Body: io.NopCloser(bytes.NewReader(hit.body)),
			ContentLength: int64(len(hit.body)), Request: req,
		}, nil
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		// io.ReadAll's buffer is at least 512 bytes; an idle target's empty list is about 40. The
		// entry keeps a copy of the body's own size: at 1,000 idle targets the buffers were 1.4 MiB
		// of a 9 MiB live heap, read again for nothing (TestETagCacheHoldsTheWorkingSetAndIsBoundedByBytes).
		body = bytes.Clone(body)
		h := http.Header{}
		for _, k := range keptHeaders {
			for _, v := range resp.Header.Values(k) {
				h.Add(k, v)
			}
		}
		c.store(&cached{key: key, etag: resp.Header.Get("ETag"), header: h, body: body})
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}

func (c *etagCache) store(e *cached) {
	size := entrySize(e)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[e.key]; ok {
		c.bytes -= entrySize(el.Value.(*cached))
		c.lru.Remove(el)
		delete(c.entries, e.key)
	}
	if size > c.maxBytes {
		return
	}
	for c.bytes+size > c.maxBytes {
		old := c.lru.Back()
		c.bytes -= entrySize(old.Value.(*cached))
		delete(c.entries, old.Value.(*cached).key)
		c.lru.Remove(old)
	}
	c.entries[e.key] = c.lru.PushFront(e)
	c.bytes += size
}

// authorize sets the Authorization header from the credential source for the request's owner,
// only on requests to host (api_url's host:port). A redirect to any other host (a download
// location, a hostile proxy) goes without the credential, as Go's client would send it if this
// transport did not re-add it on every hop; an Authorization the request carries there is dropped.
type authorize struct {
	next http.RoundTripper
	src  auth.Source
	host string
}

func (a *authorize) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.EqualFold(req.URL.Host, a.host) {
		if req.Header.Get("Authorization") != "" {
			req = req.Clone(req.Context())
			req.Header.Del("Authorization")
		}
		return a.next.RoundTrip(req)
	}
	owner, _ := req.Context().Value(ownerKey).(string)
	// The token fetch may itself call GitHub (App token renewal); label it by its own path.
	// It is a request of its own, so the governor admits it apart from the call it serves.
	tok, err := a.src.Token(context.WithValue(withEndpoint(req.Context(), ""), admittedKey{}, false), owner)
	if err != nil {
		closeBody(req)
		return nil, &credentialError{err}
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+tok)
	return a.next.RoundTrip(req)
}

// credentialError marks a failure to obtain a token (as opposed to GitHub refusing one).
type credentialError struct{ err error }

func (e *credentialError) Error() string { return e.err.Error() }
func (e *credentialError) Unwrap() error { return e.err }

func trimSlash(s string) string { return strings.TrimRight(s, "/") }
