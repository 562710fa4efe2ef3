package etcdtest

import (
	"net"
	"testing"
)

// A fresh server whose probed port another process took meanwhile moves to new ports (seen in CI,
// where packages' tests run side by side), rather than failing the test.
func TestFreshServerMovesOffATakenPort(t *testing.T) {
	s, err := newServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	taken := s.client.Host
	ln, err := net.Listen("tcp", taken)
	if err != nil {
		t.Fatalf("hold the probed port %s: %v", taken, err)
	}
	defer ln.Close()
	if err := s.start(); err != nil {
		t.Fatalf("start with its client port taken: %v", err)
	}
	defer s.Stop()
	if s.client.Host == taken {
		t.Fatalf("still on the taken port %s", taken)
	}
}
