// Package etcdtest runs a real etcd server (go.etcd.io/etcd/server/v3/embed) inside a test process,
// or the benchmark program, on loopback, for internal/fleet's tests, the fleet e2e suite and the
// fleet benchmark. Only those import it, so the server never reaches the shipped binary
// (docs/fleet.md says how that is checked).
package etcdtest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Server is one single-member etcd cluster; Stop and Start keep its data and its ports, as a real
// member that restarts does.
type Server struct {
	t            testing.TB // nil when started by Run
	dir          string
	client, peer url.URL
	e            *embed.Etcd
	started      bool // once, on these ports: a restart keeps them
}

// Start runs a fresh server for a test; the test's cleanup stops it.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := newServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Run runs a fresh server with its data in dir, for a program (the benchmark); the caller stops it.
func Run(dir string) (*Server, error) {
	s, err := newServer(dir)
	if err != nil {
		return nil, err
	}
	return s, s.start()
}

func newServer(dir string) (*Server, error) {
	client, peer, err := loopbackPair()
	if err != nil {
		return nil, err
	}
	return &Server{dir: dir, client: client, peer: peer}, nil
}

func loopbackPair() (client, peer url.URL, err error) {
	client, err1 := loopbackURL()
	peer, err2 := loopbackURL()
	return client, peer, errors.Join(err1, err2)
}

// Endpoint is the client URL to put in fleet.etcd_endpoints.
func (s *Server) Endpoint() string { return s.client.String() }

// Start (re)starts a stopped server of a test on its data and ports.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *Server) start() error {
	if s.e != nil {
		return nil
	}
	cfg := embed.NewConfig()
	cfg.Name = "etcdtest"
	cfg.Dir = s.dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{s.client}, []url.URL{s.client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{s.peer}, []url.URL{s.peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// Silent: its errors on a planned stop are noise, and a failed start is returned anyway.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true // test data: losing it on a power cut does not matter
	var e *embed.Etcd
	var err error
	// A port freed a moment ago may still be held while the old server's sockets close. A fresh
	// server's ports were only probed free (loopbackURL), so another process may have taken one
	// since (seen in CI, where packages' tests run side by side): it moves to new ones, which is
	// safe because listening fails before etcd writes anything to its data dir. A restarted
	// server keeps its ports, as a real member does.
	for i := range 50 {
		if e, err = embed.StartEtcd(cfg); err == nil {
			break
		}
		if !s.started && errors.Is(err, syscall.EADDRINUSE) && i%5 == 4 {
			if s.client, s.peer, err = loopbackPair(); err != nil {
				return err
			}
			cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{s.client}, []url.URL{s.client}
			cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{s.peer}, []url.URL{s.peer}
			cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return errors.New("embedded etcd did not become ready in 30s")
	}
	s.e, s.started = e, true
	return nil
}

// Stop stops the server, keeping its data; a stopped server is not reachable at all.
func (s *Server) Stop() {
	if s.e != nil {
		s.e.Close()
		s.e = nil
	}
}

func loopbackURL() (url.URL, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	defer ln.Close()
	return url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ln.Addr().(*net.TCPAddr).Port)}, nil
}
