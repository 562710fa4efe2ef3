//go:build linux

package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

// fakeRunner is run.sh for tests: it reports what it received without printing secrets, then
// exits as $MODE says or waits for SIGTERM and exits 42.
const fakeRunner = `#!/bin/sh
trap 'kill "$child" 2>/dev/null; echo "runner: got TERM"; exit 42' TERM
echo "runner: jit=${ACTIONS_RUNNER_INPUT_JITCONFIG:+set} jit_len=${#ACTIONS_RUNNER_INPUT_JITCONFIG}"
echo "runner: token=${GITHUB_TOKEN:-absent} custom=${CUSTOM:-absent} cwd=$(pwd)"
case "${MODE:-wait}" in
exit) exit "$CODE" ;;
kill) kill -KILL $$ ;;
orphan) sleep 600 & echo "runner: orphan=$!"; exit 0 ;;
esac
sleep 600 &
child=$!
echo "runner: ready"
wait "$child"
`

const testJIT = "eyJzZWNyZXQiOiJqaXQtY29uZmlnLXRoYXQtbXVzdC1uZXZlci1sZWFrIn0=-end"

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

// newRuntimeDir creates root/<id> holding the fake runner as run.sh in the runner's root.
func newRuntimeDir(t *testing.T, root, id string) string {
	t.Helper()
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(RunnerRoot(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(RunnerRoot(dir), "run.sh"), []byte(fakeRunner), 0o755); err != nil {
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
	livetest.Eventually(t, "exit.json in "+dir, func() bool {
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
	livetest.Eventually(t, fmt.Sprintf("%d× %q in the runner log", count, want), func() bool {
		data, _ := os.ReadFile(filepath.Join(dir, LogFile))
		return strings.Count(string(data), want) >= count
	})
}

// running is a fake runner started in its waiting mode, ready for signals.
type running struct {
	l   *Launcher
	dir string
	h   Handle
	st  ShimState
}

// startWaitingRunner starts the fake runner under a fresh launcher and returns once its TERM
// trap is set.
func startWaitingRunner(t *testing.T, id string, env map[string]string) running {
	t.Helper()
	root := t.TempDir()
	r := running{l: newTestLauncher(t, root), dir: newRuntimeDir(t, root, id)}
	r.h = startTestRunner(t, r.l, r.dir, env)
	var err error
	if r.st, err = ReadShimState(r.dir); err != nil {
		t.Fatal(err)
	}
	waitLog(t, r.dir, "runner: ready", 1)
	return r
}

// stop asks the shim to stop the runner and returns the recorded exit once the shim is gone.
func (r running) stop(t *testing.T) Exit {
	t.Helper()
	if err := r.l.Stop(context.Background(), r.h); err != nil {
		t.Fatal(err)
	}
	exit := waitExit(t, r.dir)
	livetest.Eventually(t, "the shim to exit", func() bool { ok, _ := Alive(r.h.PID, r.h.StartTime); return !ok })
	return exit
}
