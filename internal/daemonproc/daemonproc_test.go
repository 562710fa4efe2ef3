package daemonproc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/livetest"
	"github.com/runner-manager/runner-manager/internal/readiness"
)

// startSeeing starts spec and waits until the child has written the line want on either stream;
// spec's own OnLine still sees every line.
func startSeeing(t *testing.T, spec Spec, want string) *Child {
	t.Helper()
	seen := make(chan struct{})
	var once sync.Once
	onLine := spec.OnLine
	spec.OnLine = func(s Stream, l string) {
		if onLine != nil {
			onLine(s, l)
		}
		if l == want {
			once.Do(func() { close(seen) })
		}
	}
	c, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s wrote no %q line in 10 s", spec.Name, want)
	}
	return c
}

func TestChildCopiesStreamsAndStops(t *testing.T) {
	var out, errOut livetest.Buffer
	var mu sync.Mutex
	var lines []string
	c := startSeeing(t, Spec{Name: "the sleeper", Path: "sh", Args: []string{"-c", "echo hello; echo oops >&2; echo ready now; exec sleep 30"},
		Stdout: &out, Stderr: &errOut, OnLine: func(s Stream, l string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, l)
		}}, "ready now")
	if err := c.Stop(syscall.SIGTERM, 10*time.Second); err == nil || strings.Contains(err.Error(), "killed") {
		t.Errorf("a child ending on SIGTERM reports its exit (signal), not a kill: %v", err)
	}
	if c.ExitCode() != -1 {
		t.Errorf("exit code %d, want -1 for a signal", c.ExitCode())
	}
	if out.String() != "hello\nready now\n" || errOut.String() != "oops\n" {
		t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lines) // the two streams interleave in any order
	if !slices.Equal(lines, []string{"hello", "oops", "ready now"}) {
		t.Errorf("watched lines = %q, want each line of both streams once", lines)
	}
}

func TestChildStopKillsAfterGrace(t *testing.T) {
	c := startSeeing(t, Spec{Name: "the stubborn one", Path: "sh", Args: []string{"-c", "trap '' TERM; echo up; while :; do sleep 1; done"}}, "up")
	err := c.Stop(syscall.SIGTERM, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "was killed") {
		t.Errorf("stop of a child ignoring SIGTERM = %v, want a kill after the grace period", err)
	}
	if !c.Exited() {
		t.Error("the child must have exited")
	}
}

func TestStartFailsForAMissingBinary(t *testing.T) {
	if _, err := Start(Spec{Name: "nothing", Path: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("starting a missing binary must fail")
	}
}

// fakeDaemon writes a script that behaves like `runner-manager daemon` as far as readiness goes.
func fakeDaemon(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "runner-manager")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStartDaemonWaitsForTheReadyLine(t *testing.T) {
	var args livetest.Buffer
	bin := fakeDaemon(t, `echo "$@" >&2; echo '{"msg":"starting"}' >&2; sleep 0.2; echo '`+readiness.DaemonLine(77)+`'; exec sleep 30`)
	d, err := StartDaemon(context.Background(), DaemonSpec{Bin: bin, Config: "/etc/rm.toml", Args: []string{"--upgrade-source", "/src"}, Stderr: &args}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Kill()
	if d.ReadyPID != 77 {
		t.Errorf("ReadyPID %d, want the pid the ready line names", d.ReadyPID)
	}
	if first, _, _ := strings.Cut(args.String(), "\n"); first != "daemon --config /etc/rm.toml --upgrade-source /src" {
		t.Errorf("arguments %q", first)
	}
}

func TestStartDaemonReportsAnEarlyExitAndATimeout(t *testing.T) {
	_, err := StartDaemon(context.Background(), DaemonSpec{Bin: fakeDaemon(t, "exit 3")}, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited with code 3 before it was running") {
		t.Errorf("early exit: %v", err)
	}
	bin := fakeDaemon(t, "exec sleep 30")
	_, err = StartDaemon(context.Background(), DaemonSpec{Bin: bin}, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "within 200ms") {
		t.Errorf("timeout: %v", err)
	}
}

func TestStartSimReturnsItsURL(t *testing.T) {
	bin := fakeDaemon(t, `echo 'ghsim: wrote a token'; echo '`+readiness.SimLine("http://127.0.0.1:4321")+`'; exec sleep 30`)
	c, url, err := StartSim(context.Background(), bin, nil, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill()
	if url != "http://127.0.0.1:4321" {
		t.Errorf("url %q", url)
	}
}

// CheckStatic is what `make build` and the e2e harness rely on to refuse a cgo build.
func TestCheckStatic(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/hello\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cgo := range []string{"0", "1"} {
		out := filepath.Join(dir, "hello-cgo"+cgo)
		cmd := exec.Command(goTool(), "build", "-o", out, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo, "GOFLAGS=")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build with CGO_ENABLED=%s: %v\n%s", cgo, err, b)
		}
		err := CheckStatic(out)
		if cgo == "0" && err != nil {
			t.Errorf("a CGO_ENABLED=0 build was refused: %v", err)
		}
		if cgo == "1" && (err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=1")) {
			t.Errorf("a CGO_ENABLED=1 build: %v, want a refusal naming the setting", err)
		}
	}
}
