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
	if _, err := os.Lstat(socketPath); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (no socket at %s); start it with `systemctl start runner-manager`, or pass --config or --socket if it uses another state_dir", ErrNotRunning, socketPath)
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socketPath)
		},
		DisableKeepAlives: true,
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://runner-manager"+path, nil)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	resp, err := client.Do(req)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w (stale socket at %s: the daemon exited without removing it)", ErrNotRunning, socketPath)
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("cannot open %s: permission denied; run as the daemon's user or with sudo", socketPath)
	case err != nil:
		return fmt.Errorf("%w on %s: %v", ErrNotResponding, socketPath, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%w on %s: reading the answer: %v", ErrNotResponding, socketPath, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return fmt.Errorf("daemon answered %s: %s", resp.Status, e.Error)
		}
		return fmt.Errorf("daemon answered %s", resp.Status)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("status: the daemon's answer on %s is not a status document (%v); is the CLI older than the daemon?", socketPath, err)
	}
	return nil
}
