package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// MinAPIVersion is the oldest Engine API the launcher speaks: Debian's docker.io 20.10.
const MinAPIVersion = "1.41"

// API is the subset of the Docker Engine API the launcher uses; *client.Client satisfies it.
type API interface {
	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, name string) (container.CreateResponse, error)
	ContainerStart(ctx context.Context, id string, options container.StartOptions) error
	ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error)
	ContainerKill(ctx context.Context, id, signal string) error
	ContainerRemove(ctx context.Context, id string, options container.RemoveOptions) error
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerLogs(ctx context.Context, id string, options container.LogsOptions) (io.ReadCloser, error)
	ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
}

// Dial returns a client of the Docker Engine at host (a unix:// URL). It connects lazily, at the
// first call, and negotiates the API version down to the Engine's then (Docker 20.10 speaks
// 1.41; the client's own is newer). The URL's path is slash-separated on every OS (path.IsAbs):
// with filepath.IsAbs the daemon refused to start on Windows, where the default is not absolute.
func Dial(host string) (*client.Client, error) {
	u, err := url.Parse(host)
	if err != nil || u.Scheme != "unix" || !path.IsAbs(u.Path) {
		return nil, fmt.Errorf("docker_host %q is not a unix socket URL such as unix:///var/run/docker.sock", host)
	}
	c, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client for %s: %w", host, err)
	}
	return c, nil
}

// Negotiate asks the Engine for its API version and returns the one the client will speak;
// an Engine older than MinAPIVersion is refused.
func Negotiate(ctx context.Context, c *client.Client) (string, error) {
	if _, err := c.Ping(ctx); err != nil {
		return "", unavailable(err)
	}
	c.NegotiateAPIVersion(ctx)
	v := c.ClientVersion()
	if versionLess(v, MinAPIVersion) {
		return v, fmt.Errorf("the Docker Engine speaks API %s, older than %s (Docker 20.10): upgrade Docker", v, MinAPIVersion)
	}
	return v, nil
}

// versionLess compares two "major.minor" API versions.
func versionLess(a, b string) bool {
	var am, an, bm, bn int
	_, _ = fmt.Sscanf(a, "%d.%d", &am, &an)
	_, _ = fmt.Sscanf(b, "%d.%d", &bm, &bn)
	return am < bm || am == bm && an < bn
}

// unavailable wraps an error that says the Engine could not be reached at all.
func unavailable(err error) error {
	return &Failure{Reason: ReasonRuntimeUnavailable, Err: fmt.Errorf("the Docker Engine cannot be reached: %w; check that dockerd runs and daemon.docker_host names its socket", err), Retry: true}
}

// classify turns an Engine call's error into a Failure with a reason where one fits.
func classify(err error) error {
	var f *Failure
	switch {
	case err == nil || errors.As(err, &f):
		return err
	case client.IsErrConnectionFailed(err):
		return unavailable(err)
	}
	return err
}
