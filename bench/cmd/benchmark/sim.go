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

// counts are the REST requests the daemon sent, by answer: 304s cost no rate budget.
type counts struct {
	Requests    int
	NotModified int
	ByKind      map[string]int
}

func (c counts) minus(o counts) counts {
	d := counts{Requests: c.Requests - o.Requests, NotModified: c.NotModified - o.NotModified, ByKind: map[string]int{}}
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
	c.next.ServeHTTP(sw, r)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Requests++
	if sw.code == http.StatusNotModified {
		c.c.NotModified++
	}
	c.c.ByKind[kindOf(r)]++
}

func (c *counter) snapshot() counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := counts{Requests: c.c.Requests, NotModified: c.c.NotModified, ByKind: map[string]int{}}
	for k, v := range c.c.ByKind {
		s.ByKind[k] = v
	}
	return s
}

// kindOf names the endpoint of a request for the breakdown.
func kindOf(r *http.Request) string {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/actions/runners/registration-token"):
		return "POST registration-token"
	case strings.HasSuffix(p, "/actions/runner-registration"):
		return "POST runner-registration"
	case strings.HasSuffix(p, "/generate-jitconfig"):
		return "POST generate-jitconfig"
	case strings.HasSuffix(p, "/actions/runners/downloads"):
		return "GET runners/downloads"
	case strings.Contains(p, "/actions/runners/") && r.Method == http.MethodDelete:
		return "DELETE runner"
	case strings.HasSuffix(p, "/actions/runners"):
		return "GET runners"
	case strings.HasSuffix(p, "/actions/runs"):
		return "GET runs"
	case strings.HasSuffix(p, "/jobs"):
		return "GET run jobs"
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
