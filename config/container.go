package config

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Executors: where a target's runners run (docs/runner-processes.md).
const (
	ExecutorHost      = "host"
	ExecutorContainer = "container"
	// DefaultDockerHost is the Docker Engine's own socket.
	DefaultDockerHost = "unix:///var/run/docker.sock"
)

// image_pull values; absent is PullMissing.
const (
	PullMissing = "missing"
	PullAlways  = "always"
	PullNever   = "never"
)

// ExecutorOf is t's executor: its own, else the daemon's, else host.
func (c *Config) ExecutorOf(t Target) string {
	switch {
	case t.Executor != "":
		return t.Executor
	case c.Daemon.Executor != "":
		return c.Daemon.Executor
	}
	return ExecutorHost
}

// ImagePullOf is t's image_pull, PullMissing when absent.
func (t Target) ImagePullOf() string {
	if t.ImagePull == "" {
		return PullMissing
	}
	return t.ImagePull
}

// imageRef is Docker's reference grammar (distribution/reference), flattened: an optional
// registry host[:port]/, path components of lower-case alphanumerics joined by '.', '_', '__'
// or dashes, an optional :tag and an optional @sha256 digest.
var (
	imageComponent = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	imageRef       = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?/)?` + imageComponent + `(?:/` + imageComponent + `)*(?::[\w][\w.-]{0,127})?(?:@[^@]*)?$`)
	imageDigest    = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	networkName    = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
)

// containerKeys are the target keys that apply to executor = "container" only, with whether t sets each.
func containerKeys(t Target) []struct {
	key string
	set bool
} {
	return []struct {
		key string
		set bool
	}{
		{"image", t.Image != ""}, {"image_pull", t.ImagePull != ""}, {"registry_auth_file", t.RegistryAuthFile != ""},
		{"runner_in_image", t.RunnerInImage}, {"network", t.Network != ""}, {"volumes", len(t.Volumes) > 0},
		{"docker", t.Docker}, {"docker_image", t.DockerImage != ""},
	}
}

// validateExecutor checks t's executor and the container keys against it: a container needs an
// image and a network (no silent default), and the keys mean nothing to a host runner.
func (c *checker) validateExecutor(d Daemon, t Target, p string) {
	if t.Executor != "" {
		c.oneOf(p+".executor", t.Executor, ExecutorHost, ExecutorContainer)
	}
	exec := t.Executor
	if exec == "" {
		exec = d.Executor
	}
	if exec != ExecutorContainer {
		for _, k := range containerKeys(t) {
			if k.set {
				c.add(SeverityError, p+"."+k.key, fmt.Sprintf("%s applies to container runners only, and this target's runners run on the host (executor = %q): set executor = \"container\" on the target, or remove %s", k.key, exec, k.key))
			}
		}
		return
	}
	if t.Executor == ExecutorContainer {
		c.containerOS(p+".executor", "executor")
	}
	if d.RunnerUser == RunnerUserDaemon {
		c.add(SeverityError, p+".executor", "executor = \"container\" runs each job as its slot's unprivileged uid, and daemon.runner_user = \"daemon\" has no slot users: remove daemon.runner_user (the daemon runs as root), or use executor = \"host\"")
	}
	c.checkImage(p+".image", t.Image, "image is required with executor = \"container\": the image gives the runner its dependencies (glibc, ICU, OpenSSL, ...), for example image = \"ghcr.io/actions/actions-runner:2.321.0\"")
	switch {
	case t.Network == "":
		c.add(SeverityError, p+".network", "network is required with executor = \"container\" (there is no silent default): \"host\" shares the host's network, including its loopback listeners (docs/security.md); \"bridge\" or a network you created keeps the container apart")
	case !networkName.MatchString(t.Network):
		c.add(SeverityError, p+".network", fmt.Sprintf("network %q is not a Docker network name: use host, bridge or the name of a network (letters, digits, '_', '.', '-')", t.Network))
	}
	if t.ImagePull != "" {
		c.oneOf(p+".image_pull", t.ImagePull, PullMissing, PullAlways, PullNever)
	}
	if t.RegistryAuthFile != "" {
		c.secretFile(p+".registry_auth_file", t.RegistryAuthFile)
	}
	for i, v := range t.Volumes {
		c.checkVolume(fmt.Sprintf("%s.volumes.%d", p, i), v, d)
	}
	switch {
	case t.Docker:
		c.checkImage(p+".docker_image", t.DockerImage, "docker = true needs docker_image: the image of each job's Docker-in-Docker sidecar, such as \"docker:28-dind\"")
	case t.DockerImage != "":
		c.add(SeverityError, p+".docker_image", "docker_image is the image of the Docker-in-Docker sidecar and needs docker = true: set docker = true, or remove docker_image")
	}
	if t.WorkDir != "" {
		c.add(SeverityError, p+".work_dir", "work_dir applies to host runners: a container runner works in its own container, removed after its job; remove work_dir (or mount a host directory with volumes)")
	}
}

// checkImage checks an image reference; missing is the message when it is empty.
func (c *checker) checkImage(path, ref, missing string) {
	if ref == "" {
		c.add(SeverityError, path, missing)
		return
	}
	if !imageRef.MatchString(ref) {
		c.add(SeverityError, path, fmt.Sprintf("%s %q is not an image reference: use name[:tag] such as \"debian:12\" or \"registry.example:5000/team/runner:1\", or name@sha256:<digest>", display(path), ref))
		return
	}
	if _, digest, pinned := strings.Cut(ref, "@"); pinned && !imageDigest.MatchString(digest) {
		c.add(SeverityError, path, fmt.Sprintf("%s %q pins a digest that is not sha256:<64 lower-case hex digits> (got %q): copy the digest `docker images --digests` shows", display(path), ref, digest))
	}
}

// checkVolume checks one "host:container[:ro|:rw]" mount. The host's Docker socket (or a
// directory holding it) and the daemon's state dir are refused: either hands the job the host.
func (c *checker) checkVolume(path, v string, d Daemon) {
	parts := strings.Split(v, ":")
	if len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw" || len(parts) < 2 || len(parts) > 3 {
		c.add(SeverityError, path, fmt.Sprintf("volume %q must be \"/host/path:/container/path\", with \":rw\" added to make it writable (read-only otherwise)", v))
		return
	}
	src, dst := parts[0], parts[1]
	if !filepath.IsAbs(src) || !filepath.IsAbs(dst) {
		c.add(SeverityError, path, fmt.Sprintf("volume %q: both paths must be absolute", v))
		return
	}
	src = filepath.Clean(src)
	sockets := []string{"/var/run/docker.sock", "/run/docker.sock"}
	if u, err := url.Parse(d.DockerHost); err == nil && u.Scheme == "unix" {
		sockets = append(sockets, filepath.Clean(u.Path))
	}
	for _, s := range sockets {
		if isUnder(src, s) {
			c.add(SeverityError, path, fmt.Sprintf("volume %q would give jobs the Docker socket %s, and with it root on the host: mount something narrower (use docker = true for a Docker daemon of the job's own)", v, s))
			return
		}
	}
	if state := filepath.Clean(d.StateDir); filepath.IsAbs(state) && (isUnder(src, state) || isUnder(state, src)) {
		c.add(SeverityError, path, fmt.Sprintf("volume %q overlaps the daemon's state dir %s (its journal, credentials and other runners' directories): mount something outside it", v, state))
	}
}

// isUnder reports whether p is dir or below it.
func isUnder(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// validateDockerHost checks daemon.docker_host: the Engine API is spoken over a unix socket only
// (TCP would expose root on the host to the network). A unix:// URL's path is slash-separated on
// every OS: filepath.IsAbs refused the default on Windows, so every config failed there
// (e2e/windows TestValidateOfflineUnderWine).
func (c *checker) validateDockerHost(h string) {
	u, err := url.Parse(h)
	if err != nil || u.Scheme != "unix" || !path.IsAbs(u.Path) || u.Host != "" {
		c.add(SeverityError, "daemon.docker_host", fmt.Sprintf("daemon.docker_host must be a unix socket such as %q (got %q): the Docker Engine API gives root on the host, so it is never spoken over the network", DefaultDockerHost, h))
	}
}

// containerOS refuses executor = "container" (at key, named name in the message) off Linux: the container executor drives
// Docker Engine on the host, with Linux namespaces, cgroups and per-slot uids, which Windows and
// macOS do not give it. TestContainerNeedsLinux.
func (c *checker) containerOS(key, name string) {
	if c.goos == "linux" {
		return
	}
	c.add(SeverityError, key, fmt.Sprintf("%s = \"container\" needs Linux (this config is checked for %s): the container executor runs each job in a Docker container as its slot's uid, with Linux namespaces and cgroups; use %s = \"host\" here, or run container targets on a Linux host", name, c.goos, name))
}
