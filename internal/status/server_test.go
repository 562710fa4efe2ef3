package status

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// shortDir is a temp dir with a short path: t.TempDir embeds the test name and can exceed the
// ~104-byte limit of a unix socket path.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rmst")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serve claims socket, serves src in the background until the test ends, and returns a stop
// function that cancels and joins Serve.
func serve(t *testing.T, socket string, src Source) (stop func() error) {
	t.Helper()
	l, err := Listen(t.Context(), socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx, src, nil) }()
	var stopped bool
	var result error
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func staticSource(s Snapshot) Source {
	return SourceFunc(func(context.Context) (Snapshot, error) { return s, nil })
}

func TestServeAndFetchRoundTrip(t *testing.T) {
	socket := SocketPath(shortDir(t))
	want := fixture()
	stop := serve(t, socket, staticSource(want))

	fi, err := os.Stat(socket)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket mode %04o, want 0600", perm)
	}
	got, err := Fetch(t.Context(), socket)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fetch\n got %+v\nwant %+v", got, want)
	}
	runners, err := FetchRunners(t.Context(), socket)
	if err != nil || !reflect.DeepEqual(runners, want.Runners) {
		t.Errorf("FetchRunners = %+v, %v", runners, err)
	}
	if err := stop(); err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
	if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind after shutdown: %v", err)
	}
	if _, err := Fetch(t.Context(), socket); !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "no socket at "+socket) {
		t.Errorf("Fetch after shutdown: %v, want ErrNotRunning naming the socket", err)
	}
}

func TestEmptyListsAreArrays(t *testing.T) {
	socket := SocketPath(shortDir(t))
	serve(t, socket, staticSource(Snapshot{Version: "x"}))
	got, err := Fetch(t.Context(), socket)
	if err != nil {
		t.Fatal(err)
	}
	if got.Targets == nil || got.Runners == nil || got.Events == nil {
		t.Errorf("empty lists decoded as null: %+v", got)
	}
}

func TestServeRemovesStaleSocket(t *testing.T) {
	socket := SocketPath(shortDir(t))
	// A daemon killed with -9 leaves its socket file with nobody listening.
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := Fetch(t.Context(), socket); !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "stale socket") {
		t.Errorf("Fetch on a stale socket: %v, want ErrNotRunning (stale socket)", err)
	}
	serve(t, socket, staticSource(fixture()))
	if _, err := Fetch(t.Context(), socket); err != nil {
		t.Errorf("Fetch after taking over a stale socket: %v", err)
	}
}

func TestServeRefusesLiveDaemonAndNonSocket(t *testing.T) {
	dir := shortDir(t)
	socket := SocketPath(dir)
	serve(t, socket, staticSource(fixture()))
	_, err := Listen(t.Context(), socket)
	if !errors.Is(err, ErrInUse) {
		t.Errorf("second Serve: %v, want ErrInUse", err)
	}
	if _, err := Fetch(t.Context(), socket); err != nil {
		t.Errorf("the first daemon lost its socket: %v", err)
	}

	file := filepath.Join(dir, "not-a-socket")
	if err := os.WriteFile(file, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(t.Context(), file); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("Serve over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me" {
		t.Error("Serve clobbered a regular file")
	}
}

func TestServeRejectsOverlongPath(t *testing.T) {
	socket := filepath.Join("/tmp", strings.Repeat("d", 100), SocketName)
	if _, err := Listen(t.Context(), socket); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("Serve on an overlong path: %v", err)
	}
}

func TestFetchReportsSourceError(t *testing.T) {
	socket := SocketPath(shortDir(t))
	serve(t, socket, SourceFunc(func(context.Context) (Snapshot, error) {
		return Snapshot{}, errors.New("supervisor is shutting down")
	}))
	_, err := Fetch(t.Context(), socket)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "supervisor is shutting down") {
		t.Errorf("Fetch with a failing source: %v", err)
	}
}

// TestFetchHungDaemon: something accepts on the socket but never answers (a wedged daemon).
func TestFetchHungDaemon(t *testing.T) {
	socket := SocketPath(shortDir(t))
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = Fetch(ctx, socket)
	if !errors.Is(err, ErrNotResponding) {
		t.Errorf("Fetch from a hung daemon: %v, want ErrNotResponding", err)
	}
	ln.Close()
	for c := range accepted {
		c.Close()
	}
}

func TestListenerCloseRemovesSocket(t *testing.T) {
	socket := SocketPath(shortDir(t))
	l, err := Listen(t.Context(), socket)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still there after Close: %v", err)
	}
	l, err = Listen(t.Context(), socket)
	if err != nil {
		t.Fatalf("Listen again after Close: %v", err)
	}
	l.Close()
}

type fixedToken string

func (f fixedToken) Secret() ([]byte, error) { return []byte(f), nil }

// TestBearerRefusesWithoutTheToken: status over TCP answers only with the token; anything else is a
// 401 that carries no status.
func TestBearerRefusesWithoutTheToken(t *testing.T) {
	h := Bearer(Handler(SourceFunc(func(context.Context) (Snapshot, error) { return Snapshot{Version: "v-secret-status"}, nil })), fixedToken("tok-123"))
	for _, tc := range []struct {
		name, header string
		want         int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer tok-124", http.StatusUnauthorized},
		{"prefix of the token", "Bearer tok-12", http.StatusUnauthorized},
		{"basic scheme", "Basic tok-123", http.StatusUnauthorized},
		{"the token", "Bearer tok-123", http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodGet, PathStatus, nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, rec.Code, tc.want)
		}
		if leaked := strings.Contains(rec.Body.String(), "v-secret-status"); leaked != (tc.want == http.StatusOK) {
			t.Errorf("%s: body %q", tc.name, rec.Body.String())
		}
	}
}
