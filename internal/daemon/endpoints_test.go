package daemon

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/readiness"
)

// readyProbe is the daemon's stdout: when the ready line is written it dials every endpoint at
// once, from inside the daemon's own write, so a listener bound after the ready line is caught.
type readyProbe struct {
	addrs []string

	mu      sync.Mutex
	partial bytes.Buffer
	dialed  map[string]error
	ready   chan struct{}
}

func (p *readyProbe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
	probe := &readyProbe{addrs: []string{e.webhookAddr, e.metricsAddr}, ready: make(chan struct{})}
	stderr := e.create(e.logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{ConfigPath: e.configPath, Stdout: probe, Stderr: stderr, ShimExecutable: binary})
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
