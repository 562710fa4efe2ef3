//go:build windows

package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

// These run the Windows layer itself (job objects, the stop event, handles), so they need Windows
// or wine: GOOS=windows go test -c -o runner.test.exe ./internal/runner, then
// wine runner.test.exe -test.run TestWindows (docs/runner-processes.md, "Windows").

const testJIT = "eyJzZWNyZXQiOiJqaXQtY29uZmlnLXRoYXQtbXVzdC1uZXZlci1sZWFrIn0=-end"

// newWinRuntimeDir creates root/<id> whose run.cmd runs script, or the test binary as the fake
// runner when script is "".
func newWinRuntimeDir(t *testing.T, root, id, script string) string {
	t.Helper()
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(RunnerRoot(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if script == "" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		script = `"` + exe + `" fake-runner`
	}
	if err := os.WriteFile(filepath.Join(RunnerRoot(dir), "run.cmd"), []byte("@echo off\r\n"+script+"\r\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// winTempDir is t.TempDir that wine can remove: testing's RemoveAll fails there with "Invalid
// function", as os.Root's does (removeByPath).
func winTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "runner-windows-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(d); err != nil {
			if err := removeByPath(d, err); err != nil {
				t.Errorf("remove %s: %v", d, err)
			}
		}
	})
	return d
}

func newWinLauncher(t *testing.T, root string) *Launcher {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLauncher(LauncherOptions{RuntimeRoot: root, ShimExecutable: exe, ShimArgs: []string{"shim"},
		StartTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func waitWinExit(t *testing.T, dir string) Exit {
	t.Helper()
	var e Exit
	livetest.Eventually(t, "exit.json", func() bool {
		var ok bool
		e, ok, _ = ExitStatus(dir)
		return ok
	})
	return e
}

// A runner under the Windows shim: run.cmd's exit code is recorded; a stop ask reaches it (as
// Ctrl-Break, or its job is ended where it has no console, as under wine); Kill ends its job; the
// JIT config reaches it and the pipe handles do not; the directory is removed afterwards.
func TestWindowsRunnerLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		end          func(l *Launcher, h Handle, dir string) error
		check        func(e Exit) bool
	}{
		{"exit code", "exit /b 7", nil, func(e Exit) bool { return e.ExitCode == 7 && e.Signal == "" }},
		{"stop", "", func(l *Launcher, h Handle, _ string) error { return l.Stop(context.Background(), h) },
			func(e Exit) bool { return e.StopRequested && (e.ExitCode == 42 || e.Signal == "job terminated") }},
		{"kill", "", func(l *Launcher, h Handle, dir string) error { return l.Kill(context.Background(), h, dir) },
			func(e Exit) bool { return e.ExitCode == -1 && e.Signal == "job terminated" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := winTempDir(t)
			dir := newWinRuntimeDir(t, root, "att-"+strings.ReplaceAll(tc.name, " ", "-"), tc.script)
			l := newWinLauncher(t, root)
			h, err := l.Start(context.Background(), Spec{AttemptID: filepath.Base(dir), RuntimeDir: dir, JITConfig: testJIT})
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			if tc.end != nil {
				livetest.Eventually(t, "the runner to start", func() bool {
					log, _ := os.ReadFile(filepath.Join(dir, LogFile))
					return strings.Contains(string(log), "runner: jit_len=")
				})
				if err := tc.end(l, h, dir); err != nil {
					t.Fatal(err)
				}
			}
			e := waitWinExit(t, dir)
			log, _ := os.ReadFile(filepath.Join(dir, LogFile))
			if !tc.check(e) {
				t.Errorf("exit %+v; log:\n%s", e, log)
			}
			if tc.end != nil && (!strings.Contains(string(log), fmt.Sprintf("jit_len=%d handles=\"\"", len(testJIT))) || strings.Contains(string(log), testJIT)) {
				t.Errorf("the runner did not get the JIT config alone, or it was logged:\n%s", log)
			}
			livetest.Eventually(t, "the shim to end", func() bool { ok, _ := Alive(h.PID, h.StartTime); return !ok })
			if err := l.RemoveRuntimeDir(context.Background(), dir); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The shim outlives the daemon that started it, and a daemon started after finds it alive by pid
// and start time and can stop it.
func TestWindowsShimOutlivesKilledDaemon(t *testing.T) {
	root := winTempDir(t)
	dir := newWinRuntimeDir(t, root, "daemon-1", "")
	h, _ := startAndKillTestDaemon(t, root, dir, testJIT)
	if ok, err := Alive(h.PID, h.StartTime); !ok || err != nil {
		t.Fatalf("the shim died with its daemon (%v)", err)
	}
	l := newWinLauncher(t, root)
	if err := l.Stop(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if e := waitWinExit(t, dir); !e.StopRequested {
		t.Errorf("exit %+v, want the stop the second daemon asked for", e)
	}
}
