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
	"runtime"
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
	return serveOn(t, Listen, socket, src)
}

// serveOn is serve with the transport listen claims (Listen, ListenSocket or ListenTCP).
func serveOn(t *testing.T, listen func(context.Context, string) (*Listener, error), path string, src Source) (stop func() error) {
	t.Helper()
	l, err := listen(t.Context(), path)
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

// listenRaw listens on a fresh status socket path with no status server behind it.
func listenRaw(t *testing.T) (string, *net.UnixListener) {
	t.Helper()
	socket := SocketPath(shortDir(t))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	return socket, ln
}

func TestServeRemovesStaleSocket(t *testing.T) {
	// A daemon killed with -9 leaves its socket file with nobody listening.
	socket, ln := listenRaw(t)
	ln.SetUnlinkOnClose(false)
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
	socket, ln := listenRaw(t)
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
	_, err := Fetch(ctx, socket)
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

// reloadingSource is a Source that also answers reloads with res.
type reloadingSource struct {
	Source
	res   ReloadResult
	calls int
}

func (r *reloadingSource) Reload(context.Context) (ReloadResult, error) {
	r.calls++
	return r.res, nil
}

// TestTCPEndpointRoundTrip: Windows' transport, run here: the endpoint file names a loopback port
// and a token, only its owner reads it, and the client finds the daemon through it (status and reload).
func TestTCPEndpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), EndpointName)
	want := fixture()
	src := &reloadingSource{Source: staticSource(want), res: ReloadResult{Outcome: ReloadApplied, Generation: 2, Changes: "changed web (max_runners)"}}
	stop := serveOn(t, ListenTCP, path, src)

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Windows has no mode bits to check: writePrivate's DACL is the check there.
	if perm := fi.Mode().Perm(); perm != 0o600 && runtime.GOOS != "windows" {
		t.Errorf("endpoint file mode %04o, want 0600", perm)
	}
	ep, err := ReadEndpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if host, _, _ := net.SplitHostPort(ep.Address); host != "127.0.0.1" || len(ep.Token) != 64 || ep.PID != os.Getpid() {
		t.Errorf("endpoint %+v: want 127.0.0.1, a 64-hex-digit token and this pid", ep)
	}
	got, err := Fetch(t.Context(), path)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Fetch through the endpoint file = %+v, %v", got, err)
	}
	res, err := RequestReload(t.Context(), path)
	if err != nil || !reflect.DeepEqual(res, src.res) || src.calls != 1 {
		t.Errorf("RequestReload = %+v, %v (%d calls); want %+v once", res, err, src.calls, src.res)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("endpoint file still there after a clean stop: %v", err)
	}
	if _, err := Fetch(t.Context(), path); !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "no endpoint file") && !strings.Contains(err.Error(), "no socket") {
		t.Errorf("Fetch after the daemon stopped: %v, want ErrNotRunning", err)
	}
}

// TestTCPEndpointRefusesWithoutTheToken: whoever reaches the port (any local process, a job) but
// cannot read the endpoint file gets a 401 and nothing else, for status and for a reload.
func TestTCPEndpointRefusesWithoutTheToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), EndpointName)
	src := &reloadingSource{Source: staticSource(Snapshot{Version: "v-secret-status"}), res: ReloadResult{Outcome: ReloadApplied}}
	serveOn(t, ListenTCP, path, src)
	ep, err := ReadEndpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path, header string
		want                       int
	}{
		{"status, no token", http.MethodGet, PathStatus, "", http.StatusUnauthorized},
		{"status, wrong token", http.MethodGet, PathStatus, "Bearer " + strings.Repeat("0", 64), http.StatusUnauthorized},
		{"status, token prefix", http.MethodGet, PathStatus, "Bearer " + ep.Token[:63], http.StatusUnauthorized},
		{"reload, no token", http.MethodPost, PathReload, "", http.StatusUnauthorized},
		{"reload, token as basic", http.MethodPost, PathReload, "Basic " + ep.Token, http.StatusUnauthorized},
		{"status, the token", http.MethodGet, PathStatus, "Bearer " + ep.Token, http.StatusOK},
	} {
		req, err := http.NewRequestWithContext(t.Context(), tc.method, "http://"+ep.Address+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		rec := httptest.NewRecorder()
		_, _ = rec.Body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
		if leaked := strings.Contains(rec.Body.String(), "v-secret-status"); leaked != (tc.want == http.StatusOK) {
			t.Errorf("%s: body %q", tc.name, rec.Body.String())
		}
	}
	if src.calls != 0 {
		t.Errorf("%d reload(s) ran for requests without the token", src.calls)
	}
}

// TestTCPEndpointStaleFile: a daemon killed with -9 leaves its endpoint file naming a port nobody
// listens on: the client says "not running" as for a stale socket, and the next daemon replaces it.
func TestTCPEndpointStaleFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), EndpointName)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	if err := os.WriteFile(path, []byte(`{"address":"`+dead+`","token":"old","pid":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"Fetch":         func() error { _, err := Fetch(t.Context(), path); return err },
		"RequestReload": func() error { _, err := RequestReload(t.Context(), path); return err },
	} {
		if err := call(); !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "stale endpoint file") {
			t.Errorf("%s on a stale endpoint file: %v, want ErrNotRunning (stale endpoint file)", name, err)
		}
	}
	serveOn(t, ListenTCP, path, staticSource(fixture()))
	if _, err := Fetch(t.Context(), path); err != nil {
		t.Errorf("Fetch after taking over a stale endpoint file: %v", err)
	}
}

// TestTCPEndpointRefusesLiveDaemon: a second daemon on the same state directory is told at once.
func TestTCPEndpointRefusesLiveDaemon(t *testing.T) {
	path := filepath.Join(t.TempDir(), EndpointName)
	serveOn(t, ListenTCP, path, staticSource(fixture()))
	if _, err := ListenTCP(t.Context(), path); !errors.Is(err, ErrInUse) {
		t.Errorf("second ListenTCP: %v, want ErrInUse", err)
	}
	if _, err := Fetch(t.Context(), path); err != nil {
		t.Errorf("the first daemon lost its endpoint: %v", err)
	}
}

// TestReloadEndpoint: the reload's outcome crosses the socket as the daemon gave it (a rejection is
// an answer, not an error); a source that cannot reload has no such endpoint.
func TestReloadEndpoint(t *testing.T) {
	socket := SocketPath(shortDir(t))
	rejected := ReloadResult{Outcome: ReloadRejected, Generation: 1, Problems: []string{"/etc/rm.toml:26:15: target \"web\": max_runners must be at least 1"}}
	serve(t, socket, &reloadingSource{Source: staticSource(fixture()), res: rejected})
	if got, err := RequestReload(t.Context(), socket); err != nil || !reflect.DeepEqual(got, rejected) {
		t.Errorf("RequestReload = %+v, %v; want %+v", got, err, rejected)
	}

	plain := SocketPath(shortDir(t))
	serve(t, plain, staticSource(fixture()))
	if _, err := RequestReload(t.Context(), plain); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("RequestReload from a source that cannot reload: %v, want a 404", err)
	}
}
