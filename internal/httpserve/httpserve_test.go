package httpserve

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServeUntilCancelledThenShutsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, "test", srv, ln) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Fatalf("body = %q", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
		t.Fatal("the server still answers after shutdown")
	}
}

func TestServeReportsAListenerFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // Serve fails at once on a closed listener
	err = Serve(context.Background(), "metrics", &http.Server{}, ln)
	if err == nil || !strings.HasPrefix(err.Error(), "metrics: serving on ") {
		t.Fatalf("Serve on a closed listener = %v, want a prefixed serving error", err)
	}
}

// TestServeGivesEveryServerTimeouts: a server built without timeouts (the status socket's and the
// status TCP endpoint's were) gets them all, so idle clients cannot hold descriptors for ever; a
// timeout the caller chose is kept.
func TestServeGivesEveryServerTimeouts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	srv := &http.Server{WriteTimeout: time.Second}
	_ = Serve(context.Background(), "status", srv, ln)
	for name, got := range map[string][2]time.Duration{
		"ReadHeaderTimeout": {srv.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		"ReadTimeout":       {srv.ReadTimeout, DefaultReadTimeout},
		"WriteTimeout":      {srv.WriteTimeout, time.Second},
		"IdleTimeout":       {srv.IdleTimeout, DefaultIdleTimeout},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %v, want %v", name, got[0], got[1])
		}
	}
}
