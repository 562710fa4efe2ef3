package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/readiness"
	"github.com/runner-manager/runner-manager/internal/status"
)

// readyProbe is the daemon's log stream: when the ready line is written it dials every endpoint at
// once, from inside the daemon's own write, so a listener bound after the ready line is caught.
// Everything is copied to tee.
type readyProbe struct {
	addrs []string
	tee   io.Writer

	mu      sync.Mutex
	partial bytes.Buffer
	dialed  map[string]error
	ready   chan struct{}
}

func (p *readyProbe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.tee.Write(b)
	p.partial.Write(b)
	for {
		line, err := p.partial.ReadString('\n')
		if err != nil {
			p.partial.WriteString(line) // incomplete: keep it for the next write
			return len(b), nil
		}
		if _, ok := readiness.ParseDaemon(strings.TrimSuffix(line, "\n")); ok && p.dialed == nil {
			p.dialed = map[string]error{}
			for _, a := range p.addrs {
				c, err := net.DialTimeout("tcp", a, time.Second)
				if err == nil {
					c.Close()
				}
				p.dialed[a] = err
			}
			close(p.ready)
		}
	}
}

// The daemon reports that it runs only once its endpoints accept connections: a webhook delivery
// or a scrape sent on that signal is never refused.
func TestEndpointsAcceptConnectionsOnceReady(t *testing.T) {
	e := newEnv(t)
	stderr := e.create(e.logs)
	probe := &readyProbe{addrs: []string{e.webhookAddr, e.metricsAddr}, tee: stderr, ready: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{ConfigPath: e.configPath, Stderr: probe, ShimExecutable: binary})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon.Run: %v", err)
		}
		stderr.Close()
		if t.Failed() {
			t.Logf("daemon log:\n%s", e.read(e.logs))
		}
	}()
	select {
	case <-probe.ready:
	case <-time.After(waitLimit):
		t.Fatalf("no ready line within %s", waitLimit)
	}
	probe.mu.Lock()
	defer probe.mu.Unlock()
	for addr, err := range probe.dialed {
		if err != nil {
			t.Errorf("an endpoint refused a connection made on the ready line: %s: %v", addr, err)
		}
	}
}

// An endpoint whose address is taken is off, says which setting to change, and the daemon runs.
func TestBusyEndpointAddressIsReportedAndTheDaemonRuns(t *testing.T) {
	e := newEnv(t)
	busy, err := net.Listen("tcp", e.metricsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	e.start()
	log := e.read(e.logs)
	if !strings.Contains(log, "cannot listen; the endpoint is off: choose a free address for daemon.metrics_listen") {
		t.Errorf("the log does not say which setting to change:\n%s", log)
	}
}

// Status over TCP with daemon.status_token_file answers only requests carrying that token.
func TestStatusOverTCPNeedsTheBearerToken(t *testing.T) {
	e := newEnv(t)
	addr, tokenPath := freeAddr(t), filepath.Join(e.dir, "status-token")
	e.writeFile(tokenPath, "status-bearer-token\n")
	text := strings.Replace(e.configText(webTarget(1)), `status_listen = "unix"`,
		fmt.Sprintf("status_listen = %q\nstatus_token_file = %q", addr, tokenPath), 1)
	e.writeFile(e.configPath, text)
	e.start()
	get := func(token string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+status.PathStatus, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", code)
	}
	if code := get("guess"); code != http.StatusUnauthorized {
		t.Errorf("with a wrong token: %d, want 401", code)
	}
	if code := get("status-bearer-token"); code != http.StatusOK {
		t.Errorf("with the token: %d, want 200", code)
	}
}
