package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runner-manager/runner-manager/internal/livetest"
	"github.com/runner-manager/runner-manager/internal/runner/runnerusertest"
)

// The test binary doubles as the shim (and as a throwaway daemon): the launcher under test
// re-executes it with "shim" as its first argument, as the real daemon re-executes itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "shim":
			os.Exit(RunShim(context.Background(), os.Args[2:], os.Environ()))
		case "test-daemon":
			os.Exit(testDaemon())
		case "fake-runner":
			os.Exit(fakeRunnerMain())
		}
	}
	runnerusertest.SweepInMain()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	runnerusertest.SweepInMain()
	os.Exit(code)
}

// fakeRunnerMain stands in for the actions runner where no shell runs run.sh (Windows: run.cmd
// starts the test binary so): it reports what it received, without the secret, then waits for
// Ctrl-Break (os.Interrupt) and exits 42, or exits 3 after a minute.
func fakeRunnerMain() int {
	fmt.Printf("runner: jit_len=%d handles=%q\n", len(os.Getenv(JITConfigEnv)), os.Getenv(shimHandlesEnv))
	interrupt := make(chan os.Signal, 1)
	signal.Notify(interrupt, os.Interrupt)
	select {
	case <-interrupt:
		fmt.Println("runner: interrupted")
		return 42
	case <-time.After(time.Minute):
		return 3
	}
}

// startAndKillTestDaemon runs the stand-in daemon (testDaemon) on runtime directory dir below
// root, reads the handle of the runner it started, kills the daemon (SIGKILL, TerminateProcess on
// Windows) and returns the handle and the dead daemon's pid.
func startAndKillTestDaemon(t *testing.T, root, dir, jit string) (Handle, int) {
	t.Helper()
	daemon, _, stdout := livetest.Child(t, []string{"TEST_RUNTIME_ROOT=" + root, "TEST_RUNTIME_DIR=" + dir, "TEST_JIT=" + jit}, "test-daemon")
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		t.Fatalf("test daemon did not report a handle: %v", err)
	}
	var h Handle
	if err := json.Unmarshal(line, &h); err != nil {
		t.Fatal(err)
	}
	if err := daemon.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()
	return h, daemon.Process.Pid
}

// testDaemon is a stand-in daemon process: it starts one runner, prints the handle, and blocks
// until it is killed.
func testDaemon() int {
	l, err := NewLauncher(LauncherOptions{
		RuntimeRoot: os.Getenv("TEST_RUNTIME_ROOT"), ShimArgs: []string{"shim"}, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err := l.Start(context.Background(), Spec{
		AttemptID: "daemon-1", RuntimeDir: os.Getenv("TEST_RUNTIME_DIR"), JITConfig: os.Getenv("TEST_JIT"),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(h); err != nil {
		return 1
	}
	var b [1]byte
	_, _ = os.Stdin.Read(b[:]) // block until killed
	return 0
}
