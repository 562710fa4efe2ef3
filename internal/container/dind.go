package container

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
)

// The Docker daemon of a docker = true job: a sidecar container of the job's own running dockerd,
// whose socket (and nothing else) the job container shares. docs/security.md says what the
// sidecar's privileges give away.
const (
	// DindMount is where the sidecar's socket directory is mounted, in the sidecar (read-write)
	// and in the job (read-only): the job's DOCKER_HOST is DindHost.
	DindMount = "/run/dind"
	DindHost  = "unix://" + DindMount + "/docker.sock"
	// LabelDindOf marks a sidecar with the host id, as LabelHost marks runner containers; a
	// sidecar carries no LabelHost, so listing runner containers never lists it.
	LabelDindOf = "io.github.runner-manager.dind-of"
)

// dindScript starts dockerd in a container that is not --privileged (a privileged container asks
// for every capability, and fails where the host's root lacks one: docs/testing.md). Docker mounts
// the cgroup hierarchies read-only in such a container, so the script makes them writable (the
// container's own subtree only) before dockerd nests its containers there; on cgroup v2 it moves
// itself to a child group first, as docker:dind's entrypoint does, so controllers can be delegated.
// An image without iptables runs dockerd without it (no NAT for the job's containers).
const dindScript = `set -e
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
	mount -o remount,rw /sys/fs/cgroup
	mkdir -p /sys/fs/cgroup/init
	xargs -rn1 < /sys/fs/cgroup/cgroup.procs > /sys/fs/cgroup/init/cgroup.procs || :
	sed -e 's/ / +/g' -e 's/^/+/' < /sys/fs/cgroup/cgroup.controllers > /sys/fs/cgroup/cgroup.subtree_control || :
else
	for d in /sys/fs/cgroup/*; do mount -o remount,bind,rw "$d" "$d" 2>/dev/null || :; done
fi
command -v iptables >/dev/null 2>&1 || set -- "$@" --iptables=false --ip6tables=false
exec dockerd "$@"
`

// DindName is the sidecar of the runner container called job.
func DindName(job string) string { return job + "-dind" }

// dindDir is the host directory, in the attempt's runtime directory, holding the sidecar's socket.
// It is root's (0755): the job can reach the socket in it, and cannot replace it.
func dindDir(runtimeDir string) string { return filepath.Join(runtimeDir, "dind") }

// startDind creates and starts the sidecar of s: the target's image policy applies to its image
// too, it runs in the job's network (dindNetwork), and its dockerd serves a socket of group s.GID
// in dindDir. Its /var/lib/docker is an anonymous volume, removed with it. On failure nothing of
// it is left.
func (l *Launcher) startDind(ctx context.Context, s Spec) error {
	if err := os.MkdirAll(dindDir(s.RuntimeDir), 0o755); err != nil {
		return fmt.Errorf("create the Docker socket directory of %s: %w", s.Name, err)
	}
	if err := l.images.Ensure(ctx, s.DockerImage, s.ImagePull, s.RegistryAuthFile); err != nil {
		return classify(err)
	}
	missing, err := missingCaps()
	if err != nil {
		return err
	}
	cfg := &container.Config{
		Image:      s.DockerImage,
		Labels:     map[string]string{LabelDindOf: l.host, LabelAttempt: s.AttemptID, LabelTarget: s.Target},
		Entrypoint: []string{"sh", "-c", dindScript, "dind"},
		Cmd:        []string{"--host=" + DindHost, "--group=" + strconv.FormatUint(uint64(s.GID), 10)},
	}
	host := &container.HostConfig{
		Binds:       []string{dindDir(s.RuntimeDir) + ":" + DindMount + ":rw"},
		Mounts:      []mount.Mount{{Type: mount.TypeVolume, Target: "/var/lib/docker"}},
		NetworkMode: dindNetwork(s.Network),
		// Every capability the Engine knows but those root on this host lacks: naming them one by
		// one would fail on an Engine that does not know the newest (20.10 has no CAP_BPF).
		CapAdd:      []string{"ALL"},
		CapDrop:     missing,
		SecurityOpt: []string{"seccomp=unconfined", "apparmor=unconfined"},
		// Not nil: empty lists replace Docker's masked and read-only /proc and /sys paths, which a
		// nested dockerd writes to (sysctls of its containers).
		MaskedPaths:   []string{},
		ReadonlyPaths: []string{},
	}
	limit(host, s)
	name := DindName(s.Name)
	if _, err := l.api.ContainerCreate(ctx, cfg, host, nil, nil, name); err != nil {
		return errors.Join(classify(fmt.Errorf("create the Docker-in-Docker sidecar %s: %w", name, err)), l.removeOne(context.WithoutCancel(ctx), name))
	}
	if err := l.api.ContainerStart(ctx, name, container.StartOptions{}); err != nil {
		return errors.Join(classify(fmt.Errorf("start the Docker-in-Docker sidecar %s: %w", name, err)), l.removeOne(context.WithoutCancel(ctx), name))
	}
	return nil
}

// dindNetwork is the sidecar's network: the job's, except the host's, where the job's dockerd
// would create its bridges and rules among the host's own; there the sidecar gets a namespace of
// its own with no uplink ("none"): the job reaches its daemon through the socket, and the job's
// containers reach each other, not the outside.
func dindNetwork(job string) container.NetworkMode {
	if container.NetworkMode(job).IsHost() {
		return "none"
	}
	return container.NetworkMode(job)
}

// withDind gives the job container the sidecar's socket (read-only: the job may connect, not
// replace it) and DOCKER_HOST. It never gives the host's socket.
func withDind(s Spec, cfg *container.Config, host *container.HostConfig) {
	host.Binds = append(host.Binds, dindDir(s.RuntimeDir)+":"+DindMount+":ro")
	cfg.Env = append(cfg.Env, "DOCKER_HOST="+DindHost)
}

// capNames are the kernel's capabilities by number (linux/capability.h), as Docker names them.
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT",
	"CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL",
	"CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
}

// missingCaps names the capabilities missing from this process's bounding set: what root on this
// host lacks, so what the sidecar cannot be given (the Engine is root on the same host).
func missingCaps() ([]string, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil, fmt.Errorf("read the capability bounding set: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapBnd:"); ok {
			return capsOf(strings.TrimSpace(v))
		}
	}
	return nil, errors.New("read the capability bounding set: no CapBnd line in /proc/self/status")
}

// capsOf names the capabilities a CapBnd mask (hexadecimal) lacks.
func capsOf(hex string) ([]string, error) {
	mask, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return nil, fmt.Errorf("read the capability bounding set %q: %w", hex, err)
	}
	var out []string
	for i, n := range capNames {
		if mask&(1<<uint(i)) == 0 {
			out = append(out, n)
		}
	}
	return out, nil
}
