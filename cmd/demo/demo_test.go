package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/daemonproc"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := testBinDir(); err == nil {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// testBinDir holds the binaries the tests build; TestMain removes it.
var testBinDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "demo-test-bin-") })

// builds builds each binary once per test process, as `make build` does (daemonproc), into testBinDir.
var builds sync.Map // name -> func() error

func buildBinary(t *testing.T, name string) string {
	t.Helper()
	dir, err := testBinDir()
	if err != nil {
		t.Fatal(err)
	}
	f, _ := builds.LoadOrStore(name, sync.OnceValue(func() error {
		root, out := filepath.Join("..", ".."), filepath.Join(dir, name)
		switch name {
		case "runner-manager":
			return daemonproc.Build(context.Background(), root, out, "0.0.0-demo-test")
		case "ghsim":
			return daemonproc.BuildSim(context.Background(), root, out)
		}
		return fmt.Errorf("the demo tests build runner-manager and ghsim, not %s", name)
	}))
	if err := f.(func() error)(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// demoOptions is the demo's short form, run with the binaries it needs built from this tree.
func demoOptions(t *testing.T, binaries ...string) options {
	t.Helper()
	var bin string
	for _, b := range binaries {
		bin = buildBinary(t, b)
	}
	return options{Jobs: 6, Duration: 4 * time.Second, MinRun: time.Second, MaxRun: 2 * time.Second, Timeout: time.Minute,
		Config: filepath.Join("..", "..", "examples", "demo.toml"), BinDir: bin, TempDir: t.TempDir(), Seed: 1, Quiet: true, LeakWait: leakSettle}
}

// TestDemoEndToEnd runs the whole demo in its short form: the real daemon binary against the
// simulator binary, six jobs, then the leak check.
func TestDemoEndToEnd(t *testing.T) {
	t.Parallel() // mostly waiting on jobs and drains: the runs overlap well
	o := demoOptions(t, "runner-manager", "ghsim")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	res, err := run(ctx, o, &out)
	t.Cleanup(func() {
		if t.Failed() { // the run's directory goes with t.TempDir: quote its logs now
			logs, _ := filepath.Glob(filepath.Join(o.TempDir, "runner-manager-demo-*", "*.log"))
			for _, l := range logs {
				t.Log(logTail(l, 40))
			}
		}
	})
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
	t.Parallel() // mostly waiting on jobs and drains: the runs overlap well
	o := demoOptions(t, "runner-manager", "ghsim")
	o.Jobs, o.Duration, o.MinRun, o.MaxRun = 4, time.Second, 30*time.Second, 30*time.Second // busy runners at the interrupt
	// The drain waits its whole bound for busy runners; a short one keeps the test short.
	data, err := os.ReadFile(o.Config)
	if err != nil {
		t.Fatal(err)
	}
	short := strings.Replace(string(data), `shutdown_drain_timeout = "10s"`, `shutdown_drain_timeout = "1s"`, 1)
	if short == string(data) {
		t.Fatal("examples/demo.toml no longer sets shutdown_drain_timeout = \"10s\"; update this test")
	}
	o.Config = filepath.Join(t.TempDir(), "demo.toml")
	if err := os.WriteFile(o.Config, []byte(short), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out livetest.Buffer
	o.Quiet = false
	done := make(chan error, 1)
	go func() { _, err := run(ctx, o, &out); done <- err }()
	ran := func() bool { return strings.Contains(out.String(), " running  ") }
	if err := livetest.Poll(90*time.Second, 100*time.Millisecond, ran); err != nil { // the output of a real process tree
		cancel()
		t.Fatalf("no job ran: %v:\n%s", err, out.String())
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

// fakeDaemon plays a daemon that never runs a job and leaves a "runner" behind: a process naming a
// runtime directory under the state dir, and the directory itself.
const fakeDaemon = `#!/bin/sh
state=$(sed -n "s/^state_dir *= *[\"']\(.*\)[\"']$/\1/p" "$3")
[ -n "$state" ] || { echo "no state_dir in $3" >&2; exit 1; }
mkdir -p "$state-runners/a1"
sh -c 'sleep 60' "$state-runners/a1/bin/Runner.Listener" &
echo "daemon running (pid $$)"
exec sleep 60
`

// TestDemoReportsAFailingDaemon: jobs never picked up and a leaked runner make the demo fail
// with the leak listed and counted, keep its directory, and still leave no process behind.
func TestDemoReportsAFailingDaemon(t *testing.T) {
	t.Parallel() // mostly waiting on jobs and drains: the runs overlap well
	o := demoOptions(t, "ghsim")
	bin := fakeBin(t, o.BinDir, fakeDaemon)
	o.BinDir, o.Jobs, o.Duration, o.Timeout, o.LeakWait = bin, 2, 0, 500*time.Millisecond, 500*time.Millisecond
	var out bytes.Buffer
	res, err := run(context.Background(), o, &out)
	if err == nil {
		t.Fatalf("a daemon that runs nothing must fail the demo:\n%s", out.String())
	}
	for _, want := range []string{"2 of 2 jobs still not completed", "2 of 2 jobs did not complete", "runners leaked: 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	for _, want := range []string{"jobs completed     0 of 2\n", "leaked process", "a1/bin/Runner.Listener", "leaked directory", "runners leaked: 2", "kept "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if res.Queued != 2 || res.Completed != 0 {
		t.Errorf("result: %d queued, %d completed; want 2 and 0", res.Queued, res.Completed)
	}
	assertNothingLeft(t, o.TempDir)
}

// TestDemoReportsADaemonThatCannotStart: the error quotes the end of the daemon's log.
func TestDemoReportsADaemonThatCannotStart(t *testing.T) {
	t.Parallel() // mostly waiting on jobs and drains: the runs overlap well
	o := demoOptions(t, "ghsim")
	o.BinDir = fakeBin(t, o.BinDir, "#!/bin/sh\necho 'ERR no usable GitHub credential: run runner-manager auth login' >&2\nexit 4\n")
	var out bytes.Buffer
	_, err := run(context.Background(), o, &out)
	if err == nil || !strings.Contains(err.Error(), "the daemon exited with code 4 before it was running") ||
		!strings.Contains(err.Error(), "ERR no usable GitHub credential") {
		t.Errorf("error = %v, want the early exit and the end of the daemon's log", err)
	}
	assertNothingLeft(t, o.TempDir)
}

// fakeBin is a bin directory with the real ghsim and script as runner-manager.
func fakeBin(t *testing.T, realBin, script string) string {
	t.Helper()
	bin := t.TempDir()
	if err := os.Symlink(filepath.Join(realBin, "ghsim"), filepath.Join(bin, "ghsim")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "runner-manager"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
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
