package container

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/runner-manager/runner-manager/internal/runner"
)

// Labels every runner container carries, so recovery finds this host's containers and each
// container names its attempt and target.
const (
	LabelHost    = "io.github.runner-manager.host"
	LabelAttempt = "io.github.runner-manager.attempt"
	LabelTarget  = "io.github.runner-manager.target"
)

// RunnerMount is where the attempt's runner directory (the verified package) is mounted.
const RunnerMount = "/actions-runner"

// ImageSource makes an image present before a container is created from it (image_pull,
// registry credentials and digest pinning live behind it). A missing image is a *Failure with
// ReasonImageMissing.
type ImageSource interface {
	Ensure(ctx context.Context, ref, policy, authFile string) error
}

// Launcher creates, inspects and removes runner containers of one host.
type Launcher struct {
	api    API
	host   string
	images ImageSource
	// AfterCreate is called with the attempt id once its container exists, before it starts
	// (the crash tests' kill point); nil in production.
	AfterCreate func(attemptID string)
}

// New returns a Launcher for host id host over api; images nil only inspects (an image that is
// not on the host is image_missing, whatever image_pull says).
func New(api API, host string, images ImageSource) *Launcher {
	if images == nil {
		images = presentImages{api}
	}
	return &Launcher{api: api, host: host, images: images}
}

// Spec is one runner container. JITConfig is a secret: it reaches only the container's own
// environment (never a command line, a label or a log).
type Spec struct {
	Name       string // the container's name, journaled before Start
	AttemptID  string
	Target     string
	RuntimeDir string // the attempt's runtime directory; its runner root is mounted at RunnerMount
	JITConfig  string
	Env        map[string]string
	UID, GID   uint32 // the slot's uid and gid on the host: never 0

	Image, ImagePull, RegistryAuthFile string
	Network                            string
	Volumes                            []string // "/host:/container[:ro|:rw]", read-only unless rw
	RunnerInImage                      bool
	Docker                             bool   // a Docker daemon of the job's own (dind.go)
	DockerImage                        string // the sidecar's image

	MemoryMax int64 // bytes; 0: no limit
	CPUs      float64
	PidsMax   int
}

// Handle is a started container: its name and its init process on the host (so liveness is a
// local check, as for a shim).
type Handle struct {
	Name      string
	PID       int
	StartTime uint64
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (l *Launcher) check(s Spec) error {
	switch {
	case !plainName.MatchString(s.Name) || !plainName.MatchString(s.AttemptID):
		return fmt.Errorf("container name %q or attempt id %q is not a plain name", s.Name, s.AttemptID)
	case s.JITConfig == "":
		return fmt.Errorf("start container %s: no JIT config", s.Name)
	case s.UID == 0 || s.GID == 0:
		return fmt.Errorf("start container %s: a job never runs as root (uid %d, gid %d): runner slots need their users (the daemon runs as root with daemon.runner_user unset)", s.Name, s.UID, s.GID)
	case s.Image == "" || s.Network == "":
		return fmt.Errorf("start container %s: image and network are required", s.Name)
	case s.Docker && s.DockerImage == "":
		return fmt.Errorf("start container %s: docker = true needs docker_image", s.Name)
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || k == runner.JITConfigEnv {
			return fmt.Errorf("start container %s: environment variable name %q is not allowed", s.Name, k)
		}
	}
	return nil
}

// Start creates and starts the container of s. The caller has journaled s.Name; Start writes it
// into the runtime directory (ReadState) before creating any container, so the attempt's
// directory names its containers at every step, and a launch that failed before (the image, the
// Engine) leaves a directory that names none, which needs no Engine to be cleaned. When Start
// fails, no container of s is left.
func (l *Launcher) Start(ctx context.Context, s Spec) (Handle, error) {
	if err := l.check(s); err != nil {
		return Handle{}, err
	}
	if err := l.images.Ensure(ctx, s.Image, s.ImagePull, s.RegistryAuthFile); err != nil {
		return Handle{}, classify(err)
	}
	if err := writeState(s.RuntimeDir, State{Name: s.Name}); err != nil {
		return Handle{}, fmt.Errorf("start container %s: %w", s.Name, err)
	}
	if s.Docker {
		if err := l.startDind(ctx, s); err != nil {
			return Handle{}, err
		}
	}
	cfg, host := l.config(s)
	if _, err := l.api.ContainerCreate(ctx, cfg, host, nil, nil, s.Name); err != nil {
		if client.IsErrNotFound(err) {
			return Handle{}, &Failure{Reason: ReasonImageMissing, Err: fmt.Errorf("image %s is not on this host: %w", s.Image, err)}
		}
		// A create that failed after Docker made the container (a lost answer) leaves it.
		return Handle{}, errors.Join(classify(fmt.Errorf("create container %s: %w", s.Name, err)), l.Remove(context.WithoutCancel(ctx), s.Name))
	}
	if l.AfterCreate != nil {
		l.AfterCreate(s.AttemptID)
	}
	h, err := l.start(ctx, s)
	if err != nil {
		return Handle{}, errors.Join(err, l.Remove(context.WithoutCancel(ctx), s.Name))
	}
	return h, nil
}

func (l *Launcher) start(ctx context.Context, s Spec) (Handle, error) {
	if err := l.api.ContainerStart(ctx, s.Name, container.StartOptions{}); err != nil {
		if cannotExec(err.Error()) {
			return Handle{}, &Failure{Reason: ReasonDependencyMissing, Err: fmt.Errorf("the runner cannot start in image %s: %w; the image must provide the runner's entry point and what it needs (a shell, glibc, ICU, OpenSSL)", s.Image, err)}
		}
		return Handle{}, classify(fmt.Errorf("start container %s: %w", s.Name, err))
	}
	st, err := l.api.ContainerInspect(ctx, s.Name)
	if err != nil {
		return Handle{}, classify(fmt.Errorf("inspect container %s: %w", s.Name, err))
	}
	if st.State == nil || !st.State.Running {
		// Ended before its start was even confirmed: the runtime could not execute run.sh (its
		// interpreter or loader is missing: Docker 20.10 reports that as an exit, not an error),
		// or run.sh found nothing to run. Retrying would only loop.
		code, why := -1, ""
		if st.State != nil {
			code, why = st.State.ExitCode, st.State.Error
		}
		return Handle{}, &Failure{Reason: ReasonDependencyMissing, Err: fmt.Errorf("the runner ended at once in image %s (exit status %d%s): a shell, loader or command run.sh needs is missing from the image", s.Image, code, suffix(why))}
	}
	start, err := runner.ProcessStartTime(st.State.Pid)
	if err != nil {
		return Handle{Name: s.Name}, nil // ended between the inspect and the read
	}
	return Handle{Name: s.Name, PID: st.State.Pid, StartTime: start}, nil
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}

// cannotExec recognises the OCI runtime's refusal to run the entry point.
func cannotExec(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "exec") && (strings.Contains(m, "no such file") || strings.Contains(m, "not found") ||
		strings.Contains(m, "permission denied") || strings.Contains(m, "exec format error"))
}

// config is the container's configuration: the slot's uid, no privilege, no new privileges,
// the target's limits, its network and read-only volumes. The JIT config is in Env only.
func (l *Launcher) config(s Spec) (*container.Config, *container.HostConfig) {
	env := []string{runner.JITConfigEnv + "=" + s.JITConfig}
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+s.Env[k])
	}
	cfg := &container.Config{
		Image:  s.Image,
		User:   strconv.FormatUint(uint64(s.UID), 10) + ":" + strconv.FormatUint(uint64(s.GID), 10),
		Env:    env,
		Labels: map[string]string{LabelHost: l.host, LabelAttempt: s.AttemptID, LabelTarget: s.Target},
		Cmd:    []string{"./run.sh"},
	}
	var binds []string
	if !s.RunnerInImage {
		binds = append(binds, runner.RunnerRoot(s.RuntimeDir)+":"+RunnerMount+":rw")
		cfg.WorkingDir, cfg.Cmd = RunnerMount, []string{RunnerMount + "/run.sh"}
	}
	for _, v := range s.Volumes {
		if !strings.HasSuffix(v, ":rw") && !strings.HasSuffix(v, ":ro") {
			v += ":ro"
		}
		binds = append(binds, v)
	}
	host := &container.HostConfig{
		Binds:       binds,
		NetworkMode: container.NetworkMode(s.Network),
		Privileged:  false,
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges:true"},
	}
	if s.Docker {
		withDind(s, cfg, host)
	}
	limit(host, s)
	return cfg, host
}

// limit applies the target's memory_max, cpus and pids_max to a container of s (the runner's,
// and the Docker-in-Docker sidecar's, each bounded alike).
func limit(host *container.HostConfig, s Spec) {
	if s.MemoryMax > 0 {
		host.Memory, host.MemorySwap = s.MemoryMax, s.MemoryMax // no swap beyond it, as memory.max
	}
	if s.CPUs > 0 {
		host.NanoCPUs = int64(s.CPUs * 1e9)
	}
	if s.PidsMax > 0 {
		n := int64(s.PidsMax)
		host.PidsLimit = &n
	}
}

// Status is what inspecting a runner's container says.
type Status struct {
	Exists    bool
	Running   bool
	PID       int
	StartTime uint64
	Exited    bool // started once and ended
	ExitCode  int
	OOMKilled bool // the kernel killed a process of it for going past its memory limit
}

// Inspect reads the container called name; a missing one is Status{}.
func (l *Launcher) Inspect(ctx context.Context, name string) (Status, error) {
	st, err := l.api.ContainerInspect(ctx, name)
	if client.IsErrNotFound(err) {
		return Status{}, nil
	}
	if err != nil {
		return Status{}, classify(fmt.Errorf("inspect container %s: %w", name, err))
	}
	s := Status{Exists: true}
	if st.State == nil {
		return s, nil
	}
	s.Running, s.OOMKilled = st.State.Running, st.State.OOMKilled
	if s.Running {
		s.PID = st.State.Pid
		s.StartTime, _ = runner.ProcessStartTime(s.PID)
	}
	started := st.State.StartedAt != "" && !strings.HasPrefix(st.State.StartedAt, "0001-")
	if !s.Running && started && (st.State.Status == container.StateExited || st.State.Status == container.StateDead) {
		s.Exited, s.ExitCode = true, st.State.ExitCode
	}
	return s, nil
}

// Signal sends sig ("SIGTERM", "SIGKILL") to the container's init; a container that is gone or
// not running has nothing to signal.
func (l *Launcher) Signal(ctx context.Context, name, sig string) error {
	err := l.api.ContainerKill(ctx, name, sig)
	if err == nil || client.IsErrNotFound(err) || strings.Contains(err.Error(), "is not running") {
		return nil
	}
	return classify(fmt.Errorf("send %s to container %s: %w", sig, name, err))
}

// Remove removes the container called name with whatever it wrote, and its Docker-in-Docker
// sidecar if it has one; a missing one is removed.
func (l *Launcher) Remove(ctx context.Context, name string) error {
	return errors.Join(l.removeOne(ctx, name), l.removeOne(ctx, DindName(name)))
}

func (l *Launcher) removeOne(ctx context.Context, name string) error {
	err := l.api.ContainerRemove(ctx, name, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || client.IsErrNotFound(err) {
		return nil
	}
	return classify(fmt.Errorf("remove container %s: %w", name, err))
}

// Summary is one of this host's runner containers.
type Summary struct {
	Name, Attempt, Target string
	Running               bool
}

// List returns this host's runner containers, running or not. A Docker-in-Docker sidecar is
// listed under its runner container's name, once: a sweep that removes what no live attempt names
// then takes a sidecar whose runner container was never created (Remove takes both).
func (l *Launcher) List(ctx context.Context) ([]Summary, error) {
	var out []Summary
	seen := map[string]bool{}
	for _, label := range []string{LabelHost, LabelDindOf} {
		cs, err := l.api.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label+"="+l.host))})
		if err != nil {
			return nil, classify(fmt.Errorf("list runner containers: %w", err))
		}
		for _, c := range cs {
			name := c.ID
			if len(c.Names) > 0 {
				name = strings.TrimPrefix(c.Names[0], "/")
			}
			if label == LabelDindOf {
				name = strings.TrimSuffix(name, DindName(""))
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, Summary{Name: name, Attempt: c.Labels[LabelAttempt], Target: c.Labels[LabelTarget], Running: c.State == container.StateRunning})
		}
	}
	return out, nil
}

// presentImages is the ImageSource without pulls: an image is used only if the host has it.
type presentImages struct{ api API }

func (p presentImages) Ensure(ctx context.Context, ref, policy, _ string) error {
	_, err := p.api.ImageInspect(ctx, ref)
	if client.IsErrNotFound(err) {
		return &Failure{Reason: ReasonImageMissing, Err: fmt.Errorf("image %s is not on this host (image_pull = %q): load or pull it there (docker pull, docker load)", ref, policy)}
	}
	if err != nil {
		return classify(fmt.Errorf("inspect image %s: %w", ref, err))
	}
	return nil
}
