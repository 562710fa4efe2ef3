// Package etcdtest runs a real etcd server (go.etcd.io/etcd/server/v3/embed) inside a test process on
// loopback, for internal/fleet's tests and the fleet e2e suite. Only tests import it, so the server
// never reaches the shipped binary (docs/fleet.md says how that is checked).
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Server is one single-member etcd cluster; Stop and Start keep its data and its ports, as a real
// member that restarts does.
type Server struct {
	t            testing.TB
	dir          string
	client, peer url.URL
	e            *embed.Etcd
}

// Start runs a fresh server; the test's cleanup stops it.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir(), client: loopbackURL(t), peer: loopbackURL(t)}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Endpoint is the client URL to put in fleet.etcd_endpoints.
func (s *Server) Endpoint() string { return s.client.String() }

// Start (re)starts a stopped server on its data and ports.
func (s *Server) Start() {
	s.t.Helper()
	if s.e != nil {
		return
	}
	cfg := embed.NewConfig()
	cfg.Name = "etcdtest"
	cfg.Dir = s.dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{s.client}, []url.URL{s.client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{s.peer}, []url.URL{s.peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true // test data: losing it on a power cut does not matter
	var e *embed.Etcd
	var err error
	// A port freed a moment ago may still be held while the old server's sockets close.
	for range 50 {
		if e, err = embed.StartEtcd(cfg); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatalf("start embedded etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		s.t.Fatal("embedded etcd did not become ready in 30s")
	}
	s.e = e
}

// Stop stops the server, keeping its data; a stopped server is not reachable at all.
func (s *Server) Stop() {
	if s.e != nil {
		s.e.Close()
		s.e = nil
	}
}

func loopbackURL(t testing.TB) url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ln.Addr().(*net.TCPAddr).Port)}
}
