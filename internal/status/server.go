package status

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/runner-manager/runner-manager/internal/httpserve"
)

// maxSocketPath is the shortest sun_path limit among supported systems (macOS: 104 bytes incl. NUL).
const maxSocketPath = 103

// Endpoints served on the socket.
const (
	PathStatus  = "/v1/status"
	PathRunners = "/v1/runners"
)

// ErrInUse means another live daemon is serving the socket.
var ErrInUse = errors.New("another runner-manager daemon is serving status")

// Listener is a claimed status socket. Claiming it separately from serving lets the daemon fail
// at startup, before it touches anything else, when another daemon already answers there.
type Listener struct {
	ln    net.Listener
	path  string // the socket, or the endpoint file (ListenTCP)
	token []byte // ListenTCP's: every request must carry it
}

// Listen claims this platform's status transport at path (SocketPath): the unix socket
// (ListenSocket), or on Windows loopback TCP with a token (ListenTCP).
func Listen(ctx context.Context, path string) (*Listener, error) {
	if tcpTransport {
		return ListenTCP(ctx, path)
	}
	return ListenSocket(ctx, path)
}

// ListenSocket claims a unix socket at socketPath with mode 0600: it is bound under a temporary name,
// chmod-ed, then renamed into place, so it is never reachable with looser permissions. A socket
// left by a daemon that died is removed; one that still answers makes Listen fail with ErrInUse;
// anything that is not a socket is left alone and reported.
func ListenSocket(ctx context.Context, socketPath string) (*Listener, error) {
	ln, err := listen(ctx, socketPath)
	if err != nil {
		return nil, err
	}
	return &Listener{ln: ln, path: socketPath}, nil
}

// Close releases a Listener that will not be served (the daemon failed to start after Listen):
// it closes the socket and removes its file (the socket or the endpoint file). Do not call it after Serve, which does both itself.
func (l *Listener) Close() error {
	err := l.ln.Close()
	if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("status: closing %s: %w", l.path, err)
	}
	return nil
}

// Serve serves the status API from src until ctx is cancelled, then removes the socket.
// It returns nil after a clean shutdown.
func (l *Listener) Serve(ctx context.Context, src Source, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := Handler(src)
	if l.token != nil {
		h = Bearer(h, staticToken(l.token))
	}
	srv := &http.Server{
		Handler:  h,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if l.token != nil {
		log.Info("serving status", "listen", l.ln.Addr().String(), "endpoint_file", l.path)
	} else {
		log.Info("serving status", "socket", l.path)
	}
	serveErr := httpserve.Serve(ctx, "status", srv, l.ln)
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn("could not remove the status socket; the next start removes it", "socket", l.path, "err", err)
	}
	return serveErr
}

// listen claims socketPath and returns a listener bound to it with mode 0600.
func listen(ctx context.Context, socketPath string) (net.Listener, error) {
	tmp := filepath.Join(filepath.Dir(socketPath), "."+filepath.Base(socketPath)+".new")
	if len(tmp) > maxSocketPath {
		return nil, fmt.Errorf("status: socket path %s is too long for a unix socket (at most %d bytes with its temporary name); use a shorter daemon.state_dir", socketPath, maxSocketPath-5)
	}
	if err := removeStale(ctx, socketPath); err != nil {
		return nil, err
	}
	// A leftover temporary socket can only come from a crash between bind and rename.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("status: removing leftover %s: %w", tmp, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("status: listen on %s: %w; check that daemon.state_dir exists and is writable", tmp, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // the file is renamed; Serve removes the final name itself
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("status: chmod 0600 %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, socketPath); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("status: moving the socket into place at %s: %w", socketPath, err)
	}
	return ln, nil
}

// removeStale removes a socket nobody answers on, and refuses to touch a live one or a non-socket.
func removeStale(ctx context.Context, socketPath string) error {
	fi, err := os.Lstat(socketPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("status: %s exists and is not a socket; move it away so the daemon can serve status there", socketPath)
	}
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "unix", socketPath)
	if err == nil {
		conn.Close()
		return fmt.Errorf("status: %w on %s; stop it first (runner-manager status shows its pid)", ErrInUse, socketPath)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("status: probing the existing socket %s: %w", socketPath, err)
	}
	if err := os.Remove(socketPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("status: removing the stale socket %s: %w", socketPath, err)
	}
	return nil
}

// Handler serves the status endpoints from src: on the socket, and over TCP (daemon.status_listen)
// behind Bearer when daemon.status_token_file is set.
func Handler(src Source) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathStatus, func(w http.ResponseWriter, r *http.Request) {
		if snap, ok := snapshot(w, r, src); ok {
			writeJSON(w, http.StatusOK, snap)
		}
	})
	mux.HandleFunc("GET "+PathRunners, func(w http.ResponseWriter, r *http.Request) {
		if snap, ok := snapshot(w, r, src); ok {
			writeJSON(w, http.StatusOK, RunnerList{Runners: nonNil(snap.Runners)})
		}
	})
	if ds, ok := src.(DiagnosticsSource); ok {
		diagnosticsHandlers(mux, ds)
	}
	if rs, ok := src.(Reloader); ok {
		reloadHandler(mux, rs)
	}
	return mux
}

func snapshot(w http.ResponseWriter, r *http.Request, src Source) (Snapshot, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	snap, err := src.Snapshot(ctx)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "status unavailable: " + err.Error()})
		return Snapshot{}, false
	}
	// Empty lists are [] rather than null, so `jq '.targets[]'` works on an idle daemon.
	snap.Targets, snap.Runners, snap.Events = nonNil(snap.Targets), nonNil(snap.Runners), nonNil(snap.Events)
	return snap, true
}

type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// answer writes v (200), or 503 with unavailable and err's text when err is set.
func answer(w http.ResponseWriter, v any, unavailable string, err error) {
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: unavailable + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// TokenSource yields the bearer token status over TCP requires (a *secretfile.File re-reading
// daemon.status_token_file).
type TokenSource interface {
	Secret() ([]byte, error)
}

// Bearer serves h only to requests carrying "Authorization: Bearer <token>" with tok's current
// token, compared in constant time; anything else gets 401 and learns nothing of the status.
func Bearer(h http.Handler, tok TokenSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want, err := tok.Secret()
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if err != nil || len(want) == 0 || !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="runner-manager status"`)
			writeJSON(w, http.StatusUnauthorized, apiError{Error: "status over TCP needs Authorization: Bearer <token>: the one in daemon.status_token_file, or in the state directory's status.endpoint file"})
			return
		}
		h.ServeHTTP(w, r)
	})
}
