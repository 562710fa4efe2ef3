//go:build linux

package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
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
	goleak.VerifyTestMain(m)
}

// fakeRunner is run.sh for tests: it reports what it received without printing secrets, then
// exits as $MODE says or waits for SIGTERM and exits 42.
const fakeRunner = `#!/bin/sh
trap 'kill "$child" 2>/dev/null; echo "runner: got TERM"; exit 42' TERM
echo "runner: jit=${ACTIONS_RUNNER_INPUT_JITCONFIG:+set} jit_len=${#ACTIONS_RUNNER_INPUT_JITCONFIG}"
echo "runner: token=${GITHUB_TOKEN:-absent} custom=${CUSTOM:-absent} cwd=$(pwd)"
case "${MODE:-wait}" in
exit) exit "$CODE" ;;
kill) kill -KILL $$ ;;
esac
echo "runner: ready"
sleep 600 &
child=$!
wait "$child"
`

const testJIT = "eyJzZWNyZXQiOiJqaXQtY29uZmlnLXRoYXQtbXVzdC1uZXZlci1sZWFrIn0=-end"

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

func testExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func newTestLauncher(t *testing.T, root string) *Launcher {
	t.Helper()
	l, err := NewLauncher(LauncherOptions{
		RuntimeRoot:    root,
		ShimExecutable: testExecutable(t),
		ShimArgs:       []string{"shim"},
		BaseEnv:        []string{"PATH=" + os.Getenv("PATH")},
		Logger:         slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// newRuntimeDir creates root/<id> holding the fake runner as run.sh.
func newRuntimeDir(t *testing.T, root, id string) string {
	t.Helper()
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte(fakeRunner), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// killOnCleanup makes sure no shim or runner outlives a failing test.
func killOnCleanup(t *testing.T, dir string) {
	t.Cleanup(func() {
		st, err := ReadShimState(dir)
		if err != nil {
			return
		}
		if st.RunnerPID > 0 {
			if ok, _ := Alive(st.RunnerPID, st.RunnerStartTime); ok {
				_ = syscall.Kill(-st.RunnerPID, syscall.SIGKILL)
			}
		}
		_ = signalIdentified(st.PID, st.StartTime, syscall.SIGKILL)
	})
}

func startTestRunner(t *testing.T, l *Launcher, dir string, env map[string]string) Handle {
	t.Helper()
	killOnCleanup(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := l.Start(ctx, Spec{AttemptID: filepath.Base(dir), RuntimeDir: dir, JITConfig: testJIT, Env: env})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return h
}

func waitExit(t *testing.T, dir string) Exit {
	t.Helper()
	var exit Exit
	eventually(t, "exit.json in "+dir, func() bool {
		var ok bool
		var err error
		exit, ok, err = ExitStatus(dir)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	return exit
}

func readLog(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func waitLog(t *testing.T, dir, want string, count int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d× %q in the runner log", count, want), func() bool {
		data, _ := os.ReadFile(filepath.Join(dir, LogFile))
		return strings.Count(string(data), want) >= count
	})
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
