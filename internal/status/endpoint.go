package status

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"time"
)

// EndpointName is the file, in daemon.state_dir, that names the loopback TCP status endpoint and its
// token: the status API's transport on Windows (SocketPath names it there), where no unix socket
// file carries an owner-only mode the CLI can rely on.
const EndpointName = "status.endpoint"

// Endpoint is the content of the endpoint file: where the daemon answers and the bearer token it
// requires. The file is readable by the daemon's account and Administrators only (writePrivate), so
// the right to read it is the right to read status and to ask for a reload, as with the socket.
type Endpoint struct {
	Address string `json:"address"` // 127.0.0.1:port, a port the kernel chose
	Token   string `json:"token"`   // 32 random bytes, hex; new at every start
	PID     int    `json:"pid"`     // the daemon's, for the operator reading the file
}

// ListenTCP claims the status API on 127.0.0.1 (an ephemeral port) and writes the endpoint file at
// path naming it and a fresh random token; Serve then answers only requests carrying that token
// (Bearer). An endpoint file left by a daemon that died is replaced; one whose daemon still answers
// with its token makes ListenTCP fail with ErrInUse.
func ListenTCP(ctx context.Context, path string) (*Listener, error) {
	if err := removeStaleEndpoint(ctx, path); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("status: listen on 127.0.0.1: %w", err)
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // never fails (crypto/rand)
	ep := Endpoint{Address: ln.Addr().String(), Token: hex.EncodeToString(raw), PID: os.Getpid()}
	b, err := json.Marshal(ep)
	if err == nil {
		err = writePrivate(path, append(b, '\n'))
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("status: writing the endpoint file %s: %w; check that daemon.state_dir exists and is writable", path, err)
	}
	return &Listener{ln: ln, path: path, token: []byte(ep.Token)}, nil
}

// ReadEndpoint reads the endpoint file at path.
func ReadEndpoint(path string) (Endpoint, error) {
	var ep Endpoint
	b, err := os.ReadFile(path)
	if err != nil {
		return ep, err
	}
	if err := json.Unmarshal(b, &ep); err != nil || ep.Address == "" || ep.Token == "" {
		return ep, fmt.Errorf("%s is not a status endpoint file (%v); a daemon writes it at start", path, err)
	}
	return ep, nil
}

// removeStaleEndpoint removes an endpoint file whose daemon no longer answers with its token, and
// refuses one whose daemon does.
func removeStaleEndpoint(ctx context.Context, path string) error {
	ep, err := ReadEndpoint(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ep.Address+PathStatus, nil)
		if rerr == nil {
			req.Header.Set("Authorization", "Bearer "+ep.Token)
			resp, derr := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
			if derr == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return fmt.Errorf("status: %w on %s (pid %d); stop it first", ErrInUse, ep.Address, ep.PID)
				}
			}
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("status: removing the stale endpoint file %s: %w", path, err)
	}
	return nil
}

// staticToken is the token of a Listener's own endpoint file.
type staticToken []byte

func (t staticToken) Secret() ([]byte, error) { return t, nil }
