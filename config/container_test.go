package config

import (
	"slices"
	"strings"
	"testing"
)

// container is a valid container target's keys plus keys.
func container(keys string) string {
	return target("executor = \"container\"\nimage = \"debian:12\"\nnetwork = \"host\"\n" + keys)
}

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestContainerRules has one row per rule of executor and the container keys (issue 27 item 8).
func TestContainerRules(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"container target", container(""), ""},
		{"every container key", container("image_pull = \"never\"\nregistry_auth_file = \"secret\"\nrunner_in_image = true\nvolumes = [\"/srv/cache:/cache\", \"/srv/out:/out:rw\"]\ndocker = true\ndocker_image = \"docker:28-dind\"\n"), ""},
		{"pinned digest", target("executor = \"container\"\nimage = \"registry.example:5000/team/runner@" + digest + "\"\nnetwork = \"ci-net\"\n"), ""},
		{"daemon default container", "[daemon]\nexecutor = \"container\"\n" + target("image = \"debian:12\"\nnetwork = \"bridge\"\n"), ""},
		{"container needs an image", target("executor = \"container\"\nnetwork = \"host\"\n"), `target "api": image is required with executor = "container"`},
		{"container needs a network", target("executor = \"container\"\nimage = \"debian:12\"\n"), `target "api": network is required with executor = "container"`},
		{"daemon default needs an image too", "[daemon]\nexecutor = \"container\"\n" + target("network = \"host\"\n"), `image is required`},
		{"unknown executor", target("executor = \"vm\"\n"), `target "api": executor must be one of host, container (got "vm")`},
		{"unknown daemon executor", "[daemon]\nexecutor = \"vm\"\n" + auth, `daemon.executor must be one of host, container (got "vm")`},
		{"image on a host target", target("image = \"debian:12\"\n"), `6:1: target "api": image applies to container runners only`},
		{"network on a daemon-default host target", target("network = \"host\"\n"), `network applies to container runners only`},
		{"docker on an explicit host target", target("executor = \"host\"\ndocker = true\n"), `docker applies to container runners only`},
		{"bad digest", target("executor = \"container\"\nnetwork = \"host\"\nimage = \"debian@sha256:abc\"\n"), `pins a digest that is not sha256:<64 lower-case hex digits>`},
		{"bad reference", target("executor = \"container\"\nnetwork = \"host\"\nimage = \"Debian:12\"\n"), `is not an image reference`},
		{"bad network", target("executor = \"container\"\nimage = \"debian:12\"\nnetwork = \"my net\"\n"), `is not a Docker network name`},
		{"bad pull policy", container("image_pull = \"sometimes\"\n"), `image_pull must be one of missing, always, never`},
		{"docker socket volume", container("volumes = [\"/var/run:/host-run\"]\n"), `would give jobs the Docker socket /var/run/docker.sock`},
		{"root volume", container("volumes = [\"/:/host\"]\n"), `would give jobs the Docker socket`},
		{"state dir volume", container("volumes = [\"/var/lib/runner-manager/journal:/j\"]\n"), `overlaps the daemon's state dir`},
		{"relative volume", container("volumes = [\"cache:/cache\"]\n"), `both paths must be absolute`},
		{"bad volume mode", container("volumes = [\"/srv/a:/a:rx\"]\n"), `must be "/host/path:/container/path"`},
		{"docker without its image", container("docker = true\n"), `docker = true needs docker_image`},
		{"docker_image without docker", container("docker_image = \"docker:28-dind\"\n"), `docker_image is the image of the Docker-in-Docker sidecar and needs docker = true`},
		{"work_dir on a container", container("work_dir = \"/srv/work\"\n"), `work_dir applies to host runners`},
		{"container with the daemon's user", "[daemon]\nrunner_user = \"daemon\"\n" + container(""), `executor = "container" runs each job as its slot's unprivileged uid`},
		{"docker_host over tcp", "[daemon]\ndocker_host = \"tcp://127.0.0.1:2375\"\n" + auth, `daemon.docker_host must be a unix socket`},
		{"registry auth file open to all", container("registry_auth_file = \"open-token\"\n"), `registry_auth_file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(loadIn(t, "c.toml", tc.body))
			if tc.name == "container with the daemon's user" {
				got = got[1:] // runner_user = "daemon" warns on its own
			}
			wantOne(t, got, tc.want)
		})
	}
}

func TestExecutorOf(t *testing.T) {
	for _, tc := range []struct{ daemon, target, want string }{
		{"", "", ExecutorHost}, {ExecutorContainer, "", ExecutorContainer}, {ExecutorContainer, ExecutorHost, ExecutorHost}, {ExecutorHost, ExecutorContainer, ExecutorContainer},
	} {
		c := &Config{Daemon: Daemon{Executor: tc.daemon}}
		if got := c.ExecutorOf(Target{Executor: tc.target}); got != tc.want {
			t.Errorf("daemon %q target %q: got %q, want %q", tc.daemon, tc.target, got, tc.want)
		}
	}
}

// TestContainerNeedsLinux: executor = "container" is an error when the config is checked for
// another system, on the target or as the daemon's default, and the same config is fine on Linux.
func TestContainerNeedsLinux(t *testing.T) {
	const want = `executor = "container" needs Linux (this config is checked for `
	const daemonWant = "2:1: daemon." + want
	for _, tc := range []struct{ name, goos, body, want string }{
		{"target on linux", "linux", container(""), ""},
		{"target on windows", "windows", container(""), `target "api": ` + want + "windows)"},
		{"target on darwin", "darwin", container(""), `target "api": ` + want + "darwin)"},
		{"daemon default on windows", "windows", "[daemon]\nexecutor = \"container\"\n" + target("image = \"debian:12\"\nnetwork = \"host\"\n"), daemonWant + "windows)"},
		{"host target on windows", "windows", target(""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(LoadBytes("c.toml", []byte(tc.body), Options{Offline: true, GOOS: tc.goos, Environ: func() []string { return nil }}))
			// Windows also requires runner_user = "daemon" (TestWindowsRules pins that rule).
			got = slices.DeleteFunc(got, func(p string) bool { return strings.Contains(p, `daemon.runner_user must be "daemon" on Windows`) })
			wantOne(t, got, tc.want)
		})
	}
}
