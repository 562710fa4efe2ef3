package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"
)

// Errors the client reports; the CLI prints them as they are and scripts can tell them apart.
var (
	ErrNotRunning    = errors.New("daemon not running")
	ErrNotResponding = errors.New("daemon not responding")
)

// fetchTimeout bounds a whole request: a daemon that takes longer is reported as not responding.
const fetchTimeout = 10 * time.Second

// Fetch returns the daemon's current Snapshot from the socket at socketPath.
func Fetch(ctx context.Context, socketPath string) (Snapshot, error) {
	var s Snapshot
	err := get(ctx, socketPath, PathStatus, &s)
	return s, err
}

// FetchRunners returns the runners the daemon owns, from the socket at socketPath.
func FetchRunners(ctx context.Context, socketPath string) ([]Runner, error) {
	var l RunnerList
	err := get(ctx, socketPath, PathRunners, &l)
	return l.Runners, err
}

func get(ctx context.Context, socketPath, path string, into any) error {
	return call(ctx, socketPath, http.MethodGet, path, fetchTimeout, into)
}

// call sends one request to the daemon at where (SocketPath: a unix socket, or an endpoint file
// naming loopback TCP and its token; the file's type says which) and decodes a 200 answer into into.
func call(ctx context.Context, where, method, path string, timeout time.Duration, into any) error {
	fi, err := os.Lstat(where)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (no %s at %s); %s, or pass --config or --socket if it uses another state_dir", ErrNotRunning, transportKind(), where, startHint)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	auth, stale := "", "stale socket"
	if err == nil && fi.Mode().IsRegular() {
		ep, err := ReadEndpoint(where)
		switch {
		case errors.Is(err, fs.ErrPermission):
			return fmt.Errorf("cannot read %s: permission denied; run as the daemon's account or as an Administrator", where)
		case err != nil:
			return fmt.Errorf("status: %w", err)
		}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", ep.Address)
		}
		auth, stale = "Bearer "+ep.Token, "stale endpoint file"
	} else {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", where)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://runner-manager"+path, nil)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	switch {
	case err != nil && refused(err):
		return fmt.Errorf("%w (%s at %s: the daemon exited without removing it)", ErrNotRunning, stale, where)
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("cannot open %s: permission denied; run as the daemon's user or with sudo", where)
	case err != nil:
		return fmt.Errorf("%w on %s: %v", ErrNotResponding, where, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%w on %s: reading the answer: %v", ErrNotResponding, where, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return fmt.Errorf("daemon answered %s: %s", resp.Status, e.Error)
		}
		return fmt.Errorf("daemon answered %s", resp.Status)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("status: the daemon's answer on %s is not a status document (%v); is the CLI older than the daemon?", where, err)
	}
	return nil
}

// transportKind names what SocketPath is on this platform, for a message.
func transportKind() string {
	if tcpTransport {
		return "endpoint file"
	}
	return "socket"
}
