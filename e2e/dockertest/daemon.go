//go:build e2e

// Package dockertest gives the container tests a Docker Engine of their own and images built on
// this host: internal/dockerd (a private dockerd as root, its own --data-root, --exec-root,
// pidfile and unix socket under a temporary directory, no iptables, no bridge; images by `docker
// import`, never from a registry, since none is reachable from the CI hosts) wrapped for testing.T,
// stopped with everything it made at the test's cleanup.
//
// It never skips: a test that cannot get a working dockerd fails saying what is missing (root,
// the docker.io package, busybox-static), as the other root-only e2e suites do.
package dockertest

import (
	"io"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/dockerd"
)

// Options are the private daemon's extra settings (insecure registries, storage driver).
type Options = dockerd.Options

// Image is an image imported into a private daemon.
type Image = dockerd.Image

// Daemon is a running private dockerd: Host (a DOCKER_HOST value), Socket, Dir, HTTPClient.
type Daemon struct {
	*dockerd.Daemon
}

// Start runs a private dockerd for the test and stops it, with everything it made, at cleanup. It
// fails the test, saying what is missing, when it is not root, dockerd is not installed or the
// daemon does not answer.
func Start(t testing.TB, opts Options) *Daemon {
	t.Helper()
	d, err := dockerd.Start(opts)
	if err != nil {
		t.Fatalf("dockertest: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("dockertest: cleanup: %v", err)
		}
	})
	return &Daemon{d}
}

// Docker runs the docker CLI against this daemon and returns its trimmed stdout; it fails the test
// with the command's output when the command fails.
func (d *Daemon) Docker(t testing.TB, args ...string) string {
	t.Helper()
	out, err := d.Run(nil, args...)
	if err != nil {
		t.Fatalf("dockertest: %v", err)
	}
	return out
}

// DockerIn is Docker with stdin, returning the error (with the command's stderr) instead of failing.
func (d *Daemon) DockerIn(stdin io.Reader, args ...string) (string, error) {
	return d.Run(stdin, args...)
}

// Containers lists the IDs of every container of this daemon, running or not.
func (d *Daemon) Containers(t testing.TB) []string {
	t.Helper()
	return strings.Fields(d.Docker(t, "ps", "--all", "--quiet", "--no-trunc"))
}
