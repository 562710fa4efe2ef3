package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/bench"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// counts are the REST requests the daemon sent, by answer: 304s cost no rate budget, but they cost
// their secondary-limit points (GET 1, mutative 5) like any other answer.
type counts struct {
	Requests    int
	NotModified int
	Points      int
	// Rereads are GETs of a URL (path and query) answered before in this run; RereadsCharged those of
	// them answered in full (not 304): with nothing changed at GitHub, an ETag cache miss.
	Rereads, RereadsCharged int
	// RereadRepos is how many repositories had a URL of theirs read again (/repos/{owner}/{repo}/...).
	RereadRepos int
	ByKind      map[string]int
}

func (c counts) minus(o counts) counts {
	d := counts{Requests: c.Requests - o.Requests, NotModified: c.NotModified - o.NotModified, Points: c.Points - o.Points,
		Rereads: c.Rereads - o.Rereads, RereadsCharged: c.RereadsCharged - o.RereadsCharged, RereadRepos: c.RereadRepos - o.RereadRepos,
		ByKind: map[string]int{}}
	for k, v := range c.ByKind {
		if n := v - o.ByKind[k]; n != 0 {
			d.ByKind[k] = n
		}
	}
	return d
}

// counter wraps the simulator's handler on the address the daemon is given, so every REST call
// the daemon makes is counted (runners and package downloads use the simulator's own address).
type counter struct {
	next http.Handler
	mu   sync.Mutex
	c    counts
	// requests being served now and the most ever at once (the simulator's latency included)
	inFlight, peakInFlight int
	seen                   map[string]bool // GET URLs answered so far
	rereadRepos            map[string]bool // repositories with a URL read again
}

// repoOf is the "owner/repo" of a /repos/{owner}/{repo}/... path, "" for any other.
func repoOf(path string) string {
	f := strings.SplitN(strings.TrimPrefix(path, "/repos/"), "/", 3)
	if !strings.HasPrefix(path, "/repos/") || len(f) < 2 {
		return ""
	}
	return f[0] + "/" + f[1]
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	c.mu.Lock()
	c.inFlight++
	c.peakInFlight = max(c.peakInFlight, c.inFlight)
	c.mu.Unlock()
	c.next.ServeHTTP(sw, r)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight--
	c.c.Requests++
	c.c.Points += points(r.Method)
	if r.Method == http.MethodGet {
		if u := r.URL.RequestURI(); c.seen[u] {
			c.c.Rereads++
			if sw.code != http.StatusNotModified {
				c.c.RereadsCharged++
			}
			if repo := repoOf(r.URL.Path); repo != "" && !c.rereadRepos[repo] {
				if c.rereadRepos == nil {
					c.rereadRepos = map[string]bool{}
				}
				c.rereadRepos[repo] = true
				c.c.RereadRepos++
			}
		} else {
			if c.seen == nil {
				c.seen = map[string]bool{}
			}
			c.seen[u] = true
		}
	}
	if sw.code == http.StatusNotModified {
		c.c.NotModified++
	}
	c.c.ByKind[kindOf(r)]++
}

func (c *counter) snapshot() counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.c
	s.ByKind = map[string]int{}
	for k, v := range c.c.ByKind {
		s.ByKind[k] = v
	}
	return s
}

// peak is the most requests the daemon had in flight at once.
func (c *counter) peak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peakInFlight
}

// points is GitHub's secondary-limit cost of a request: GET, HEAD and OPTIONS 1, the rest 5.
func points(method string) int {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return 1
	}
	return 5
}

// endpointKinds names a request by how its path ends, the first match winning.
var endpointKinds = []struct{ suffix, kind string }{
	{"/actions/runners/registration-token", "POST registration-token"},
	{"/actions/runner-registration", "POST runner-registration"},
	{"/generate-jitconfig", "POST generate-jitconfig"},
	{"/actions/runners/downloads", "GET runners/downloads"},
	{"/actions/runners", "GET runners"},
	{"/actions/runs", "GET runs"},
	{"/jobs", "GET run jobs"},
	{"/repos", "GET repos"},
	{"/installation/repositories", "GET repos"},
}

// kindOf names the endpoint of a request for the breakdown. A runner's DELETE is told apart by
// its method: its path ends in the runner's id, under /actions/runners/ as no other kind's does.
func kindOf(r *http.Request) string {
	p := r.URL.Path
	if r.Method == http.MethodDelete && strings.Contains(p, "/actions/runners/") {
		return "DELETE runner"
	}
	for _, e := range endpointKinds {
		if strings.HasSuffix(p, e.suffix) {
			return e.kind
		}
	}
	return r.Method + " other"
}

// world is one simulator with n repositories, its counted front address and a token file.
type world struct {
	sim       *ghsim.Server
	front     *http.Server
	frontURL  string
	count     *counter
	token     string
	tokenFile string
}

func newWorld(ctx context.Context, dir string, repos int, pkg ghsim.Package, opts ghsim.Options) (*world, error) {
	sim, err := ghsim.New(opts)
	if err != nil {
		return nil, err
	}
	if err := sim.Start(ctx); err != nil {
		return nil, err
	}
	sim.CreateOrg(bench.Org)
	for i := 1; i <= repos; i++ {
		sim.CreateRepo(bench.Org, strings.TrimPrefix(bench.Repo(i), bench.Org+"/"))
	}
	sim.ServeRunnerPackage(pkg)
	w := &world{sim: sim, count: &counter{next: sim, c: counts{ByKind: map[string]int{}}}}
	w.token = sim.AddToken(ghsim.TokenOptions{Login: "bench"})
	w.tokenFile = filepath.Join(dir, "token")
	if err := os.WriteFile(w.tokenFile, []byte(w.token+"\n"), 0o600); err != nil {
		sim.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		sim.Close()
		return nil, err
	}
	w.frontURL = "http://" + ln.Addr().String()
	w.front = &http.Server{Handler: w.count, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := w.front.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "benchmark: counting front of the simulator stopped:", err)
		}
	}()
	return w, nil
}

// budgetUsed is the primary rate budget the daemon's token has spent in the current hour.
func (w *world) budgetUsed() int {
	_, used, _ := w.sim.RateUsage(w.token)
	return used
}

func (w *world) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = w.front.Shutdown(ctx)
	_ = w.sim.Close()
}

// freePort returns a loopback address nobody listens on right now (for the daemon's webhook).
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}
