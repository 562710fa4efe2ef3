package container

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestDockerJobGetsItsOwnDaemon: with docker = true the job's sidecar is created before the job,
// not privileged yet holding root's capabilities, unlisted as a runner container, in the job's
// network, bounded like the job; the job gets its socket read-only and DOCKER_HOST, never the
// host's socket, and no JIT config reaches the sidecar; Remove takes both (issue 27 item 5).
func TestDockerJobGetsItsOwnDaemon(t *testing.T) {
	f := newFake()
	s := spec(t)
	s.Network, s.Docker, s.DockerImage = "jobs", true, "dind:local"
	l := New(f, "h1", nil)
	if _, err := l.Start(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	side, sh := f.created[DindName(s.Name)], f.hosts[DindName(s.Name)]
	if side == nil {
		t.Fatalf("no sidecar %s created (created %v)", DindName(s.Name), f.created)
	}
	if side.Image != "dind:local" || side.Labels[LabelHost] != "" || side.Labels[LabelDindOf] != "h1" || side.Labels[LabelAttempt] != s.AttemptID {
		t.Errorf("sidecar image %q labels %v: want docker_image, the dind-of label and no runner label", side.Image, side.Labels)
	}
	if sh.Privileged || !slices.Equal(sh.CapAdd, []string{"ALL"}) || len(sh.MaskedPaths) != 0 || sh.MaskedPaths == nil {
		t.Errorf("sidecar privileged %v caps %v masked %v: want root's capabilities, unprivileged, no masked paths", sh.Privileged, sh.CapAdd, sh.MaskedPaths)
	}
	if string(sh.NetworkMode) != "jobs" || sh.Memory != s.MemoryMax || sh.PidsLimit == nil || *sh.PidsLimit != int64(s.PidsMax) {
		t.Errorf("sidecar network %q memory %d pids %v: want the job's network and limits", sh.NetworkMode, sh.Memory, sh.PidsLimit)
	}
	if !slices.Contains(side.Cmd, "--group=990") || !slices.Contains(side.Cmd, "--host="+DindHost) {
		t.Errorf("sidecar dockerd args %v: want its socket at %s for the slot's group", side.Cmd, DindHost)
	}
	if !slices.Contains(sh.Binds, dindDir(s.RuntimeDir)+":"+DindMount+":rw") {
		t.Errorf("sidecar binds %v", sh.Binds)
	}
	for _, e := range side.Env {
		if strings.Contains(e, secret) {
			t.Errorf("the JIT config reached the sidecar: %q", e)
		}
	}
	job, jh := f.created[s.Name], f.hosts[s.Name]
	if !slices.Contains(job.Env, "DOCKER_HOST="+DindHost) || !slices.Contains(jh.Binds, dindDir(s.RuntimeDir)+":"+DindMount+":ro") {
		t.Errorf("job env %v binds %v: want DOCKER_HOST and the sidecar's socket read-only", job.Env, jh.Binds)
	}
	for _, b := range append(jh.Binds, sh.Binds...) {
		if strings.Contains(b, "docker.sock") {
			t.Errorf("a container mounts a Docker socket of the host: %q", b)
		}
	}
	if err := l.Remove(context.Background(), s.Name); err != nil {
		t.Fatal(err)
	}
	if len(f.created) != 0 || !slices.Contains(f.removed, DindName(s.Name)) {
		t.Fatalf("after Remove: left %v, removed %v", f.created, f.removed)
	}
}

// TestListNamesAnOrphanSidecarByItsRunner: a sidecar whose runner container was never created (a
// kill -9 between the two creates) is listed under the runner's name, once, so the startup sweep's
// Remove of that name takes it; with its runner container there, the name is listed once.
func TestListNamesAnOrphanSidecarByItsRunner(t *testing.T) {
	f := newFake()
	s := spec(t)
	s.Network, s.Docker, s.DockerImage = "jobs", true, "dind:local"
	l := New(f, "h1", nil)
	if err := l.startDind(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	for _, withRunner := range []bool{false, true} {
		if withRunner {
			if _, err := l.Start(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		}
		got, err := l.List(context.Background())
		if err != nil || len(got) != 1 || got[0].Name != s.Name || got[0].Attempt != s.AttemptID {
			t.Fatalf("runner created %v: List = %+v, %v; want %s once", withRunner, got, err, s.Name)
		}
	}
	if err := l.Remove(context.Background(), s.Name); err != nil || len(f.created) != 0 {
		t.Fatalf("Remove = %v, left %v", err, f.created)
	}
}

// TestDockerJobOnHostNetwork: the sidecar of a job on the host's network gets a network namespace
// of its own ("none"), so its dockerd never makes bridges among the host's interfaces.
func TestDockerJobOnHostNetwork(t *testing.T) {
	f := newFake()
	s := spec(t)
	s.Network, s.Docker, s.DockerImage = "host", true, "dind:local"
	if _, err := New(f, "h1", nil).Start(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if got := f.hosts[DindName(s.Name)].NetworkMode; got != "none" {
		t.Fatalf("sidecar network %q for a job on the host's; want none", got)
	}
	if got := f.hosts[s.Name].NetworkMode; got != "host" {
		t.Fatalf("job network %q; want the target's, host", got)
	}
}

func TestCapsOf(t *testing.T) {
	for _, tc := range []struct {
		mask string
		want []string
		n    int
	}{
		{"000001ffffffffff", nil, 0},
		{"000001fffffffffe", []string{"CAP_CHOWN"}, 1},
		{"000001fffeffffff", []string{"CAP_SYS_RESOURCE"}, 1}, // this sandbox's root
		{"0000000000000000", nil, 41},
	} {
		got, err := capsOf(tc.mask)
		if err != nil || len(got) != tc.n || tc.want != nil && !slices.Equal(got, tc.want) {
			t.Errorf("capsOf(%s) = %v, %v; want %d capabilities %v", tc.mask, got, err, tc.n, tc.want)
		}
	}
	if _, err := capsOf("zz"); err == nil {
		t.Error("capsOf(zz): want an error")
	}
}
