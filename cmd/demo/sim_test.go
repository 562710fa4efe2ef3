package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/ghsimtest"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

func startInProcessSim(t *testing.T) *ghsim.Server {
	t.Helper()
	return ghsimtest.Start(t, ghsim.Options{})
}

func TestSimClientAgainstTheSimulator(t *testing.T) {
	srv := startInProcessSim(t)
	c := newSimClient(srv.URL())
	ctx := context.Background()
	if err := c.createRepo(ctx, "demo-org/web"); err != nil {
		t.Fatal(err)
	}
	id, err := c.queueJob(ctx, plannedJob{Repo: "demo-org/web", Labels: []string{"self-hosted", "demo"}, Name: "build-1", Duration: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Jobs) != 1 || s.Jobs[0].ID != id || s.Jobs[0].Status != ghsim.StatusQueued || s.Jobs[0].Repo != "demo-org/web" ||
		strings.Join(s.Jobs[0].Labels, ",") != "self-hosted,demo" || s.Jobs[0].CreatedAt.IsZero() {
		t.Errorf("polled jobs = %+v, want the queued job %d", s.Jobs, id)
	}
	if _, err := c.queueJob(ctx, plannedJob{Repo: "demo-org/nope", Labels: []string{"x"}}); err == nil || !strings.Contains(err.Error(), "422") {
		t.Errorf("queueing on an unknown repository: %v, want the simulator's 422", err)
	}
	if err := c.createRepo(ctx, "no-slash"); err == nil {
		t.Error("a repository without owner/ must be refused")
	}
}

func TestFindLeaks(t *testing.T) {
	srv := startInProcessSim(t)
	c := newSimClient(srv.URL())
	root := filepath.Join(t.TempDir(), "state", "runners")
	ctx := context.Background()

	l, err := findLeaks(ctx, c, root)
	if err != nil || l.count() != 0 {
		t.Fatalf("a run that never started a runner leaks nothing: %+v %v", l, err)
	}

	// A runtime directory left behind, and a process naming it (as a shim's --runtime-dir does).
	dir := filepath.Join(root, "attempt-1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "sleep 30", "shim", "--runtime-dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Until the child has exec'd, its command line is still this test binary's; on a loaded
	// machine that window is long enough for findLeaks to miss it.
	var b []byte
	if err := livetest.Poll(10*time.Second, 10*time.Millisecond, func() bool {
		b, _ = os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
		return strings.Contains(string(b), dir)
	}); err != nil {
		t.Fatalf("the process did not start sh (%v): cmdline %q", err, b)
	}
	l, err = findLeaks(ctx, c, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Dirs) != 1 || l.Dirs[0] != dir {
		t.Errorf("dirs = %v, want [%s]", l.Dirs, dir)
	}
	if len(l.Processes) != 1 || l.Processes[0].PID != cmd.Process.Pid {
		t.Errorf("processes = %+v, want pid %d", l.Processes, cmd.Process.Pid)
	}
	killLeftovers(l.Processes)
	if err := cmd.Wait(); err == nil {
		t.Error("killLeftovers must end the process")
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	l, err = awaitNoLeaks(ctx, c, root, time.Second)
	if err != nil || l.count() != 0 {
		t.Errorf("after cleanup: %+v %v", l, err)
	}
}
