package container

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fakeAPI records what the launcher asks of the Engine and answers from its fields.
type fakeAPI struct {
	created   map[string]*container.Config
	hosts     map[string]*container.HostConfig
	removed   []string
	killed    []string
	noImage   bool
	startErr  error
	createErr error
	state     *container.State
	listed    []string // every list call's label filters
}

func newFake() *fakeAPI {
	return &fakeAPI{created: map[string]*container.Config{}, hosts: map[string]*container.HostConfig{},
		state: &container.State{Running: true, Pid: os.Getpid(), Status: container.StateRunning}}
}

func (f *fakeAPI) ContainerCreate(_ context.Context, c *container.Config, h *container.HostConfig, _ *network.NetworkingConfig, _ *ocispec.Platform, name string) (container.CreateResponse, error) {
	if f.createErr != nil {
		return container.CreateResponse{}, f.createErr
	}
	f.created[name], f.hosts[name] = c, h
	return container.CreateResponse{ID: "id-" + name}, nil
}
func (f *fakeAPI) ContainerStart(context.Context, string, container.StartOptions) error {
	return f.startErr
}
func (f *fakeAPI) ContainerInspect(_ context.Context, id string) (container.InspectResponse, error) {
	if _, ok := f.created[id]; !ok {
		return container.InspectResponse{}, cerrdefs.ErrNotFound
	}
	return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{State: f.state}}, nil
}
func (f *fakeAPI) ContainerKill(_ context.Context, id, sig string) error {
	f.killed = append(f.killed, id+" "+sig)
	return nil
}
func (f *fakeAPI) ContainerRemove(_ context.Context, id string, _ container.RemoveOptions) error {
	if _, ok := f.created[id]; !ok {
		return cerrdefs.ErrNotFound
	}
	delete(f.created, id)
	f.removed = append(f.removed, id)
	return nil
}
func (f *fakeAPI) ContainerList(_ context.Context, o container.ListOptions) ([]container.Summary, error) {
	f.listed = append(f.listed, o.Filters.Get("label")...)
	var out []container.Summary
	for name, c := range f.created {
		if !matchLabels(o.Filters.Get("label"), c.Labels) {
			continue
		}
		out = append(out, container.Summary{Names: []string{"/" + name}, Labels: c.Labels, State: container.StateRunning})
	}
	return out, nil
}

// matchLabels is the Engine's label filter: every "key=value" of want is among labels.
func matchLabels(want []string, labels map[string]string) bool {
	for _, w := range want {
		k, v, _ := strings.Cut(w, "=")
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeAPI) ContainerLogs(context.Context, string, container.LogsOptions) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader("")), nil
}
func (f *fakeAPI) ImageInspect(context.Context, string, ...client.ImageInspectOption) (image.InspectResponse, error) {
	if f.noImage {
		return image.InspectResponse{}, cerrdefs.ErrNotFound
	}
	return image.InspectResponse{}, nil
}

const secret = "jit-secret-value"

func spec(t *testing.T) Spec {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "runner"), 0o755); err != nil {
		t.Fatal(err)
	}
	return Spec{Name: "runner-manager-h1-7", AttemptID: "h1-7", Target: "api", RuntimeDir: dir, JITConfig: secret,
		Env: map[string]string{"B": "2", "A": "1"}, UID: 990, GID: 990, Image: "debian:12", Network: "host",
		Volumes: []string{"/srv/cache:/cache", "/srv/out:/out:rw"}, MemoryMax: 256 << 20, CPUs: 1.5, PidsMax: 512}
}

// TestStartCreatesAnUnprivilegedLabelledContainer pins the container's configuration: labels
// naming host, attempt and target; the slot's uid; no privilege; the JIT config in its
// environment only; limits in its HostConfig; volumes read-only unless marked (issue 27 items 1-3).
func TestStartCreatesAnUnprivilegedLabelledContainer(t *testing.T) {
	f := newFake()
	s := spec(t)
	h, err := New(f, "h1", nil).Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != s.Name || h.PID != os.Getpid() || h.StartTime == 0 {
		t.Errorf("handle %+v: want the container's name and its init's pid and start time", h)
	}
	c, hc := f.created[s.Name], f.hosts[s.Name]
	if c.Labels[LabelHost] != "h1" || c.Labels[LabelAttempt] != "h1-7" || c.Labels[LabelTarget] != "api" {
		t.Errorf("labels %v", c.Labels)
	}
	if c.User != "990:990" {
		t.Errorf("user %q, want the slot's uid:gid", c.User)
	}
	if want := []string{"ACTIONS_RUNNER_INPUT_JITCONFIG=" + secret, "A=1", "B=2"}; !slices.Equal(c.Env, want) {
		t.Errorf("env %q, want %q", c.Env, want)
	}
	if strings.Contains(strings.Join(c.Cmd, " "), secret) || strings.Contains(strings.Join(c.Entrypoint, " "), secret) {
		t.Errorf("the JIT config is on the command line: %q", c.Cmd)
	}
	for k, v := range c.Labels {
		if strings.Contains(k+v, secret) {
			t.Errorf("the JIT config is in a label")
		}
	}
	if !slices.Equal(c.Cmd, []string{RunnerMount + "/run.sh"}) || c.WorkingDir != RunnerMount {
		t.Errorf("cmd %q in %q, want the mounted runner's run.sh", c.Cmd, c.WorkingDir)
	}
	wantBinds := []string{filepath.Join(s.RuntimeDir, "runner") + ":" + RunnerMount + ":rw", "/srv/cache:/cache:ro", "/srv/out:/out:rw"}
	if !slices.Equal(hc.Binds, wantBinds) {
		t.Errorf("binds %q, want %q", hc.Binds, wantBinds)
	}
	if hc.Privileged || !slices.Contains(hc.CapDrop, "ALL") || !slices.Contains(hc.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("privileges: privileged %v, cap drop %v, security %v", hc.Privileged, hc.CapDrop, hc.SecurityOpt)
	}
	if hc.Memory != 256<<20 || hc.MemorySwap != 256<<20 || hc.NanoCPUs != 1.5e9 || hc.PidsLimit == nil || *hc.PidsLimit != 512 {
		t.Errorf("limits: memory %d swap %d cpus %d pids %v", hc.Memory, hc.MemorySwap, hc.NanoCPUs, hc.PidsLimit)
	}
	if hc.NetworkMode != "host" {
		t.Errorf("network %q", hc.NetworkMode)
	}
	st, ok, err := ReadState(s.RuntimeDir)
	if err != nil || !ok || st.Name != s.Name {
		t.Errorf("runtime directory names %+v %v %v, want %s", st, ok, err, s.Name)
	}
}

func TestRunnerInImageMountsNothing(t *testing.T) {
	f := newFake()
	s := spec(t)
	s.RunnerInImage, s.Volumes = true, nil
	if _, err := New(f, "h1", nil).Start(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if c, hc := f.created[s.Name], f.hosts[s.Name]; len(hc.Binds) != 0 || !slices.Equal(c.Cmd, []string{"./run.sh"}) || c.WorkingDir != "" {
		t.Errorf("binds %q cmd %q dir %q: want the image's own run.sh in its working directory", hc.Binds, c.Cmd, c.WorkingDir)
	}
}

// TestStartFailuresHaveReasons: each launch failure carries its reason, and none leaves a container.
func TestStartFailuresHaveReasons(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(*fakeAPI, *Spec)
		reason string
		retry  bool
	}{
		{"image not on the host", func(f *fakeAPI, _ *Spec) { f.noImage = true }, ReasonImageMissing, false},
		{"engine down", func(f *fakeAPI, _ *Spec) {
			f.createErr = client.ErrorConnectionFailed("unix:///nonexistent.sock")
		}, ReasonRuntimeUnavailable, true},
		{"entry point missing", func(f *fakeAPI, _ *Spec) {
			f.startErr = errors.New(`OCI runtime create failed: exec: "/actions-runner/run.sh": stat /actions-runner/run.sh: no such file or directory: unknown`)
		}, ReasonDependencyMissing, false},
		{"interpreter missing", func(f *fakeAPI, _ *Spec) {
			f.state = &container.State{Status: container.StateExited, ExitCode: 127, StartedAt: "2026-12-06T05:00:00Z"}
		}, ReasonDependencyMissing, false},
		{"ended before its start was confirmed", func(f *fakeAPI, _ *Spec) {
			f.state = &container.State{Status: container.StateExited, ExitCode: 255, StartedAt: "2026-12-06T05:00:00Z"}
		}, ReasonDependencyMissing, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			s := spec(t)
			tc.setup(f, &s)
			_, err := New(f, "h1", nil).Start(context.Background(), s)
			var fail *Failure
			if !errors.As(err, &fail) || fail.FailureReason() != tc.reason || fail.Temporary() != tc.retry {
				t.Fatalf("got %v, want a %s failure (retry %v)", err, tc.reason, tc.retry)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error holds the JIT config: %v", err)
			}
			if len(f.created) != 0 {
				t.Errorf("a failed start left containers %v", f.created)
			}
			// A launch that failed before any container names none: it is cleaned without the Engine.
			if _, named, _ := ReadState(s.RuntimeDir); named && tc.reason == ReasonImageMissing {
				t.Errorf("the runtime directory names a container that was never created")
			}
		})
	}
}

func TestStartRefusesRoot(t *testing.T) {
	s := spec(t)
	s.UID = 0
	if _, err := New(newFake(), "h1", nil).Start(context.Background(), s); err == nil || !strings.Contains(err.Error(), "never runs as root") {
		t.Fatalf("got %v, want a refusal of uid 0", err)
	}
}

func TestInspect(t *testing.T) {
	started := "2026-12-06T05:00:00.1Z"
	for _, tc := range []struct {
		name  string
		state *container.State
		want  Status
	}{
		{"created, never started", &container.State{Status: container.StateCreated, StartedAt: "0001-01-01T00:00:00Z"}, Status{Exists: true}},
		{"exited", &container.State{Status: container.StateExited, ExitCode: 3, StartedAt: started}, Status{Exists: true, Exited: true, ExitCode: 3}},
		{"killed for memory", &container.State{Status: container.StateExited, ExitCode: 137, OOMKilled: true, StartedAt: started}, Status{Exists: true, Exited: true, ExitCode: 137, OOMKilled: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.created["c"], f.state = &container.Config{}, tc.state
			got, err := New(f, "h1", nil).Inspect(context.Background(), "c")
			if err != nil || got != tc.want {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
	got, err := New(newFake(), "h1", nil).Inspect(context.Background(), "gone")
	if err != nil || got.Exists {
		t.Fatalf("a missing container: got %+v %v", got, err)
	}
}

func TestListFiltersByHost(t *testing.T) {
	f := newFake()
	l := New(f, "h1", nil)
	if _, err := l.Start(context.Background(), spec(t)); err != nil {
		t.Fatal(err)
	}
	got, err := l.List(context.Background())
	if err != nil || len(got) != 1 || got[0].Attempt != "h1-7" || got[0].Name != "runner-manager-h1-7" || got[0].Target != "api" {
		t.Fatalf("got %+v %v", got, err)
	}
	if v := f.listed; !slices.Equal(v, []string{LabelHost + "=h1", LabelDindOf + "=h1"}) {
		t.Errorf("list filters %v, want this host's runner and sidecar labels", v)
	}
	if err := l.Remove(context.Background(), "runner-manager-h1-7"); err != nil {
		t.Fatal(err)
	}
	if err := l.Remove(context.Background(), "runner-manager-h1-7"); err != nil {
		t.Fatalf("removing a removed container: %v", err)
	}
}

// TestNegotiatesDebianDockerAPI: against an Engine that speaks 1.41 (Debian's docker.io 20.10),
// the client negotiates down to 1.41; an older one is refused (issue 27 item 1).
func TestNegotiatesDebianDockerAPI(t *testing.T) {
	for _, tc := range []struct{ engine, want, err string }{
		{"1.41", "1.41", ""}, {"1.51", "", ""}, {"1.40", "1.40", "older than 1.41"},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "docker.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Api-Version", tc.engine)
				_, _ = io.WriteString(w, "OK")
			})}
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { _ = srv.Close() })
			c, err := Dial("unix://" + sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got, err := Negotiate(context.Background(), c)
			want := tc.want
			if want == "" {
				want = api.DefaultVersion // the client's own, when the Engine is newer
			}
			if got != want || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("negotiated %q (%v), want %q (%q)", got, err, want, tc.err)
			}
		})
	}
}

func TestDialRefusesTCP(t *testing.T) {
	if _, err := Dial("tcp://127.0.0.1:2375"); err == nil {
		t.Fatal("a TCP docker_host was accepted")
	}
}

func TestNegotiateUnavailable(t *testing.T) {
	c, err := Dial("unix://" + filepath.Join(t.TempDir(), "none.sock"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Negotiate(context.Background(), c)
	var f *Failure
	if !errors.As(err, &f) || f.Reason != ReasonRuntimeUnavailable {
		t.Fatalf("got %v, want %s", err, ReasonRuntimeUnavailable)
	}
}
