//go:build e2e

package faults

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

// Request is one API request the daemon sent, as the recording proxy saw it.
type Request struct {
	Start  time.Time // when the request reached the proxy
	End    time.Time // when the simulator's answer came back
	Method string
	Path   string
	Status int
	Header http.Header // the answer's headers
}

func (r Request) String() string {
	return fmt.Sprintf("%s %s %s -> %d", r.Start.Format("15:04:05.000"), r.Method, r.Path, r.Status)
}

// Recorder is a reverse proxy in front of the simulator that logs every request with its time.
// The simulator counts fault hits but keeps no request log; the daemon's api_url points here so
// "no request before Retry-After" can be checked against real timestamps. Runner downloads and the
// fake runners' own traffic go to the simulator directly (their URLs come from the simulator).
type Recorder struct {
	srv *httptest.Server

	mu   sync.Mutex
	reqs []Request
}

// StartRecorder proxies to sim until the test ends.
func StartRecorder(t testing.TB, sim *harness.Sim) *Recorder {
	t.Helper()
	target, err := url.Parse(sim.URL())
	if err != nil {
		t.Fatalf("parse the simulator URL: %v", err)
	}
	rec := &Recorder{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		rec.add(Request{Start: startOf(resp.Request), End: time.Now(), Method: resp.Request.Method,
			Path: resp.Request.URL.Path, Status: resp.StatusCode, Header: resp.Header.Clone()})
		return nil
	}
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		rec.add(Request{Start: startOf(r), End: time.Now(), Method: r.Method, Path: r.URL.Path, Status: http.StatusBadGateway})
		w.WriteHeader(http.StatusBadGateway)
	}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxy.ServeHTTP(w, r.WithContext(withStart(r.Context(), time.Now())))
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// URL is the proxy's base URL, for github.api_url.
func (r *Recorder) URL() string { return r.srv.URL }

func (r *Recorder) add(q Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, q)
}

// Requests returns the requests so far whose path matches, in arrival order ("" matches all).
func (r *Recorder) Requests(pathContains string) []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Request
	for _, q := range r.reqs {
		if strings.Contains(q.Path, pathContains) {
			out = append(out, q)
		}
	}
	return out
}

// First returns the first request with status code after since, and whether there is one.
func (r *Recorder) First(since time.Time, code int) (Request, bool) {
	for _, q := range r.Requests("") {
		if q.Status == code && !q.Start.Before(since) {
			return q, true
		}
	}
	return Request{}, false
}

// Between returns the requests (paths containing pathContains) that reached the proxy in (from, to).
func (r *Recorder) Between(from, to time.Time, pathContains string) []Request {
	var out []Request
	for _, q := range r.Requests(pathContains) {
		if q.Start.After(from) && q.Start.Before(to) {
			out = append(out, q)
		}
	}
	return out
}

// Dump lists the requests since from, for failure messages.
func (r *Recorder) Dump(from time.Time) string {
	var b strings.Builder
	for _, q := range r.Requests("") {
		if !q.Start.Before(from) {
			b.WriteString("  " + q.String() + "\n")
		}
	}
	return b.String()
}
