package livetest

import (
	"context"
	"net"
	"sync"
)

// Serve runs serve on a fresh 127.0.0.1 listener in a goroutine of its own and returns the
// listener's address; stop cancels serve's context and returns what serve returned (once: later
// calls return the same). serve owns the listener, as the daemon's servers do.
func Serve(t TB, serve func(ctx context.Context, ln net.Listener) error) (addr string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on loopback: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln) }()
	return ln.Addr().String(), sync.OnceValue(func() error { cancel(); return <-done })
}
