// Package dockerd runs a private Docker Engine: a dockerd of its own (data root, exec root, pidfile
// and unix socket under a temporary directory, no iptables, no bridge) for the container tests
// (e2e/dockertest wraps it for testing.T) and the container benchmarks (bench/cmd/benchmark), and
// builds images from this host's files with `docker import`, never from a registry. Stop removes
// every container of the engine, stops it and unmounts and deletes what it made. It needs root.
package dockerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// startTimeout bounds dockerd's start: about 1 s on an idle CI host, far more with eight test
// processes compiling beside it.
const startTimeout = 90 * time.Second

// Options are the private daemon's extra settings.
type Options struct {
	// InsecureRegistries are host:port addresses dockerd may pull from over plain HTTP (the
	// in-process registry of the pull tests listens on 127.0.0.1).
	InsecureRegistries []string
	// StorageDriver is dockerd's --storage-driver; empty lets dockerd choose (overlay2 here).
	StorageDriver string
}

// Daemon is a running private dockerd.
type Daemon struct {
	// Dir holds everything of this daemon: data, exec root, socket, pidfile, log.
	Dir string
	// Socket is the path of the daemon's API socket; Host is the same as a DOCKER_HOST value.
	Socket, Host string

	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// Start runs a private dockerd and waits until it answers; Stop ends it. The error says what is
// missing when it cannot (root, the docker.io package) or ends with dockerd's log when it does not
// answer within startTimeout.
func Start(opts Options) (*Daemon, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("a private dockerd needs root; run as root, as CI does")
	}
	dockerd, err := exec.LookPath("dockerd")
	if err != nil {
		return nil, errors.New("dockerd not found on PATH: install Debian's docker.io (`make e2e-tools` does: apt-get install docker.io)")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		return nil, errors.New("the docker CLI is not on PATH: install Debian's docker.io (`make e2e-tools`)")
	}
	// Not a deep temporary directory: a unix socket path must stay under 108 bytes, and the exec
	// root holds containerd's sockets a few levels deeper.
	dir, err := os.MkdirTemp("", "rm-dockerd-")
	if err != nil {
		return nil, err
	}
	d := &Daemon{Dir: dir, Socket: filepath.Join(dir, "docker.sock"), log: filepath.Join(dir, "dockerd.log"), done: make(chan struct{})}
	d.Host = "unix://" + d.Socket
	// An empty config file keeps the host's /etc/docker/daemon.json (if any) out.
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	args := []string{
		"--config-file", filepath.Join(dir, "daemon.json"),
		"--data-root", filepath.Join(dir, "data"),
		"--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"),
		"--host", d.Host,
		"--iptables=false", "--ip6tables=false", "--bridge=none",
	}
	for _, r := range opts.InsecureRegistries {
		args = append(args, "--insecure-registry", r)
	}
	if opts.StorageDriver != "" {
		args = append(args, "--storage-driver", opts.StorageDriver)
	}
	logf, err := os.Create(d.log)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	d.cmd = exec.Command(dockerd, args...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = groupAttr()
	if err := d.cmd.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start dockerd: %w", err)
	}
	go func() { _ = d.cmd.Wait(); logf.Close(); close(d.done) }()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := d.waitReady(ctx); err != nil {
		tail := d.LogTail(40)
		return nil, errors.Join(fmt.Errorf("the private dockerd did not start (%w); its log ends:\n%s", err, tail), d.Stop())
	}
	return d, nil
}

// PID is dockerd's process id.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// waitReady polls GET /_ping on the socket until it answers OK.
func (d *Daemon) waitReady(ctx context.Context) error {
	c := d.HTTPClient()
	for {
		select {
		case <-d.done:
			return errors.New("dockerd exited")
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker/_ping", nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no answer on %s within %s", d.Socket, startTimeout)
		case <-d.done:
			return errors.New("dockerd exited")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// HTTPClient talks to the daemon's API socket (any host name in the URL).
func (d *Daemon) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", d.Socket)
		},
	}}
}

// LogTail is the last n lines of dockerd's log, for failure messages.
func (d *Daemon) LogTail(n int) string {
	data, _ := os.ReadFile(d.log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Run runs the docker CLI against this daemon with stdin and returns its trimmed stdout, or an
// error holding the command's stderr.
func (d *Daemon) Run(stdin io.Reader, args ...string) (string, error) {
	cmd := exec.Command("docker", append([]string{"--host", d.Host}, args...)...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(stdout.String()), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Stop removes every container (so no shim or job process outlives the engine), stops dockerd
// (SIGTERM, then SIGKILL to its process group after 30 s), unmounts what it left mounted under
// Dir (its network namespace, overlay mounts) and deletes Dir.
func (d *Daemon) Stop() error {
	var errs []error
	if ids, err := d.Run(nil, "ps", "--all", "--quiet"); err == nil && ids != "" {
		if _, err := d.Run(nil, append([]string{"rm", "--force", "--volumes"}, strings.Fields(ids)...)...); err != nil {
			errs = append(errs, err)
		}
	}
	_ = d.cmd.Process.Signal(stopSignal)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		errs = append(errs, errors.New("dockerd did not stop within 30 s of SIGTERM; killed its process group"))
		killGroup(d.cmd.Process.Pid)
		<-d.done
	}
	// dockerd's containerd is in its process group; a SIGTERMed dockerd stops it, this makes sure.
	killGroup(d.cmd.Process.Pid)
	if err := unmountUnder(d.Dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(d.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
