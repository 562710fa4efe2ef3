package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

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

// eventually polls cond until it holds or a deadline passes: for real process and file events.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
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
