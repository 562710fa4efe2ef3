package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if testBinDir != "" {
		os.RemoveAll(testBinDir)
	}
	os.Exit(code)
}

// testBinDir holds the binaries builtBinaries made; TestMain removes it.
var testBinDir string

// builtBinaries builds runner-manager and ghsim once per test process, as `make build` does.
var builtBinaries = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "demo-test-bin-")
	if err != nil {
		return "", err
	}
	testBinDir = dir
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, b := range []struct{ out, pkg string }{{"runner-manager", "./cmd/runner-manager"}, {"ghsim", "./cmd/ghsim"}} {
		cmd := exec.Command(goBin, "build", "-o", filepath.Join(dir, b.out), b.pkg)
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			return dir, &buildError{pkg: b.pkg, out: string(out), err: err}
		}
	}
	return dir, nil
})

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

func demoOptions(t *testing.T) options {
	t.Helper()
	bin, err := builtBinaries()
	if err != nil {
		t.Fatal(err)
	}
	return options{Jobs: 6, Duration: 4 * time.Second, MinRun: time.Second, MaxRun: 2 * time.Second, Timeout: time.Minute,
		Config: filepath.Join("..", "..", "examples", "demo.toml"), BinDir: bin, TempDir: t.TempDir(), Seed: 1, Quiet: true}
}

// TestDemoEndToEnd runs the whole demo in its short form: the real daemon binary against the
// simulator binary, six jobs, then the leak check.
func TestDemoEndToEnd(t *testing.T) {
	o := demoOptions(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	res, err := run(ctx, o, &out)
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	if res.Queued != 6 || res.Completed != 6 || res.Conclusions["success"] != 6 {
		t.Errorf("jobs: %d queued, %d completed %v; want 6 and 6 successes\n%s", res.Queued, res.Completed, res.Conclusions, out.String())
	}
	if len(res.Latencies) != 6 || res.Peak < 1 || res.Peak > res.MaxRunners || res.Launched < 6 {
		t.Errorf("latencies %v, peak %d of %d, launched %d\n%s", res.Latencies, res.Peak, res.MaxRunners, res.Launched, out.String())
	}
	for _, want := range []string{"jobs completed     6 of 6", "runners leaked: 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "  running  ") {
		t.Errorf("-quiet must print no live view:\n%s", out.String())
	}
	assertNothingLeft(t, o.TempDir)
}

// TestDemoInterrupted plays Ctrl-C in the middle of the stream: the demo stops the daemon, kills
// what it left, stops the simulator and removes its directory.
func TestDemoInterrupted(t *testing.T) {
	o := demoOptions(t)
	o.Jobs, o.Duration, o.MinRun, o.MaxRun = 4, time.Second, 30*time.Second, 30*time.Second // busy runners at the interrupt
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	o.Quiet = false
	done := make(chan error, 1)
	go func() { _, err := run(ctx, o, &out); done <- err }()
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(out.String(), " running  ") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no job ran within 90 s:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond) // polling the output of a real process tree
	}
	cancel()
	if err := <-done; err == nil || ctx.Err() == nil {
		t.Fatalf("an interrupted demo must return the interruption, got %v", err)
	}
	assertNothingLeft(t, o.TempDir)
	if entries, _ := os.ReadDir(o.TempDir); len(entries) != 0 {
		t.Errorf("the run's directory must be removed after an interrupt, found %v", entries)
	}
}

// assertNothingLeft fails when any process names the demo's directory (simulator, daemon, shims, runners).
func assertNothingLeft(t *testing.T, dir string) {
	t.Helper()
	ps, err := processesNaming(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) > 0 {
		killLeftovers(ps)
		t.Errorf("processes left behind: %+v", ps)
	}
}

// syncBuffer is a bytes.Buffer the demo writes from its goroutine while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
