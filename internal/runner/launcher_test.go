//go:build linux

package runner

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

func procFile(t *testing.T, pid int, name string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + name)
	if err != nil {
		t.Fatalf("read /proc/%d/%s: %v", pid, name, err)
	}
	return string(data)
}

func TestStartStopRecordsExit(t *testing.T) {
	t.Parallel()
	r := startWaitingRunner(t, "a1", map[string]string{"CUSTOM": "yes"})
	if r.st.Handle() != r.h || r.st.AttemptID != "a1" || r.st.RunnerPID <= 0 {
		t.Fatalf("shim.json = %+v, handle %+v", r.st, r.h)
	}
	if ok, err := Alive(r.h.PID, r.h.StartTime); !ok || err != nil {
		t.Fatalf("shim not alive after Start: %v %v", ok, err)
	}
	if ok, _ := Alive(r.st.RunnerPID, r.st.RunnerStartTime); !ok {
		t.Fatal("runner not alive after Start")
	}
	if _, ok, _ := ExitStatus(r.dir); ok {
		t.Fatal("exit.json exists while the runner runs")
	}
	exit := r.stop(t)
	if exit.ExitCode != 42 || exit.Signal != "" || !exit.StopRequested || exit.FinishedAt.IsZero() {
		t.Fatalf("exit = %+v, want code 42 after the runner's TERM trap, stop requested", exit)
	}
	log := readLog(t, r.dir)
	for _, want := range []string{
		"jit=set jit_len=" + strconv.Itoa(len(testJIT)), "custom=yes", "token=absent", "cwd=" + r.dir, "runner: got TERM",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("runner log lacks %q:\n%s", want, log)
		}
	}
	if err := r.l.Stop(context.Background(), r.h); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Stop after exit = %v, want ErrNotRunning", err)
	}
}

// The JIT config never shows in ps, in the shim's environment, or on disk.
func TestJITConfigStaysSecret(t *testing.T) {
	t.Parallel()
	r := startWaitingRunner(t, "secret", nil)
	h, st, dir := r.h, r.st, r.dir
	for _, pid := range []int{h.PID, st.RunnerPID} {
		if cmdline := procFile(t, pid, "cmdline"); strings.Contains(cmdline, testJIT) || strings.Contains(cmdline, "jitconfig") {
			t.Errorf("pid %d command line carries the JIT config: %q", pid, cmdline)
		}
	}
	if strings.Contains(procFile(t, h.PID, "environ"), testJIT) {
		t.Error("the shim's environment carries the JIT config")
	}
	// Only the runner itself holds it, in its environment (readable by its own user only).
	if !strings.Contains(procFile(t, st.RunnerPID, "environ"), JITConfigEnv+"="+testJIT) {
		t.Error("the runner's environment lacks the JIT config")
	}
	// No descriptor beyond stdin/stdout/stderr (and the shell's own script) reaches the runner.
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(st.RunnerPID) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		target, _ := os.Readlink("/proc/" + strconv.Itoa(st.RunnerPID) + "/fd/" + fd.Name())
		if strings.HasPrefix(target, "pipe:") || strings.HasPrefix(target, "socket:") {
			t.Errorf("runner inherited fd %s -> %s", fd.Name(), target)
		}
	}
	r.stop(t)
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), testJIT) {
			t.Errorf("%s contains the JIT config", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// SIGTERM, SIGINT and SIGHUP from anyone (a terminal, the process group, a service manager) do
// not stop the shim or its runner; only the daemon's ask does.
func TestShimIgnoresStraySignals(t *testing.T) {
	t.Parallel()
	r := startWaitingRunner(t, "deaf", nil)
	h, st, dir := r.h, r.st, r.dir
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		if err := syscall.Kill(-h.PID, sig); err != nil { // the shim's whole process group
			t.Fatal(err)
		}
	}
	waitLog(t, dir, "ignoring signal", 3)
	for _, p := range []Handle{h, {st.RunnerPID, st.RunnerStartTime}} {
		if ok, _ := Alive(p.PID, p.StartTime); !ok {
			t.Fatalf("pid %d died from a stray signal", p.PID)
		}
	}
	if _, ok, _ := ExitStatus(dir); ok {
		t.Fatal("the runner exited after stray signals")
	}
	if exit := r.stop(t); exit.ExitCode != 42 {
		t.Fatalf("exit = %+v", exit)
	}
}

func TestExitStatusRecordsHowTheRunnerEnded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      map[string]string
		wantCode int
		wantSig  string
	}{
		{"success", map[string]string{"MODE": "exit", "CODE": "0"}, 0, ""},
		{"failure", map[string]string{"MODE": "exit", "CODE": "3"}, 3, ""},
		{"killed", map[string]string{"MODE": "kill"}, -1, "SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := newRuntimeDir(t, root, tt.name)
			startTestRunner(t, newTestLauncher(t, root), dir, tt.env)
			exit := waitExit(t, dir)
			if exit.ExitCode != tt.wantCode || exit.Signal != tt.wantSig || exit.StopRequested || exit.Error != "" {
				t.Fatalf("exit = %+v, want code %d signal %q", exit, tt.wantCode, tt.wantSig)
			}
		})
	}
}

// Start fails cleanly, and leaves nothing running, when the runner cannot start.
func TestStartFailsWhenRunnerCannotStart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	l := newTestLauncher(t, root)
	dir := newRuntimeDir(t, root, "broken")
	// Executable, but its interpreter does not exist: exec fails inside the shim.
	if err := os.WriteFile(filepath.Join(RunnerRoot(dir), "run.sh"), []byte("#!/nonexistent/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	killOnCleanup(t, dir)
	_, err := l.Start(context.Background(), Spec{AttemptID: "broken", RuntimeDir: dir, JITConfig: testJIT})
	if err == nil || !strings.Contains(err.Error(), "start runner") || strings.Contains(err.Error(), testJIT) {
		t.Fatalf("Start = %v, want a start failure naming no secret", err)
	}
	st, serr := ReadShimState(dir)
	if serr != nil {
		t.Fatal(serr)
	}
	livetest.Eventually(t, "the failed shim to exit", func() bool { ok, _ := Alive(st.PID, st.StartTime); return !ok })
	exit, ok, _ := ExitStatus(dir)
	if !ok || exit.ExitCode != -1 || exit.Error == "" {
		t.Fatalf("exit.json = %+v %v, want the start error recorded", exit, ok)
	}
}

func TestStartRejectsBadSpecs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	l := newTestLauncher(t, root)
	good := newRuntimeDir(t, root, "good")
	noScript := filepath.Join(root, "empty")
	if err := os.Mkdir(noScript, 0o755); err != nil {
		t.Fatal(err)
	}
	used := newRuntimeDir(t, root, "used")
	if err := writeJSONAtomic(used, ShimStateFile, ShimState{PID: 1}); err != nil {
		t.Fatal(err)
	}
	outside := newRuntimeDir(t, t.TempDir(), "outside")
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"outside root", Spec{AttemptID: "x", RuntimeDir: outside, JITConfig: testJIT}, "outside the runtime root"},
		{"root itself", Spec{AttemptID: "x", RuntimeDir: root, JITConfig: testJIT}, "outside the runtime root"},
		{"dot-dot", Spec{AttemptID: "x", RuntimeDir: root + "/../x", JITConfig: testJIT}, "outside the runtime root"},
		{"no jit", Spec{AttemptID: "x", RuntimeDir: good}, "no JIT config"},
		{"bad attempt", Spec{AttemptID: "../x", RuntimeDir: good, JITConfig: testJIT}, "attempt id"},
		{"jit via env", Spec{AttemptID: "x", RuntimeDir: good, JITConfig: testJIT, Env: map[string]string{JITConfigEnv: "y"}}, "not allowed"},
		{"no run.sh", Spec{AttemptID: "x", RuntimeDir: noScript, JITConfig: testJIT}, "materialise"},
		{"used", Spec{AttemptID: "x", RuntimeDir: used, JITConfig: testJIT}, "already has a shim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.Start(context.Background(), tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

// The daemon's environment (which may hold its credential) does not reach runners by default.
func TestDefaultBaseEnvIsAllowlisted(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_daemon_credential")
	root := t.TempDir()
	l, err := NewLauncher(LauncherOptions{RuntimeRoot: root, ShimExecutable: testExecutable(t), ShimArgs: []string{"shim"},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	dir := newRuntimeDir(t, root, "env")
	startTestRunner(t, l, dir, map[string]string{"MODE": "exit", "CODE": "0"})
	waitExit(t, dir)
	if log := readLog(t, dir); !strings.Contains(log, "token=absent") {
		t.Fatalf("the daemon's GITHUB_TOKEN reached the runner:\n%s", log)
	}
}

// A shim keeps its runner alive and records its exit when the daemon that started it is
// killed with SIGKILL; a later daemon can stop it.
func TestShimOutlivesKilledDaemon(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := newRuntimeDir(t, root, "daemon-1")
	killOnCleanup(t, dir)
	h, daemonPID := startAndKillTestDaemon(t, root, dir, testJIT)

	st, err := ReadShimState(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Handle{h, {st.RunnerPID, st.RunnerStartTime}} {
		if ok, err := Alive(p.PID, p.StartTime); !ok || err != nil {
			t.Fatalf("pid %d died with the daemon (%v)", p.PID, err)
		}
	}
	if ppid := strings.Fields(procFile(t, h.PID, "stat")[strings.LastIndexByte(procFile(t, h.PID, "stat"), ')')+1:])[1]; ppid == strconv.Itoa(daemonPID) {
		t.Fatal("the shim is still the daemon's child")
	}
	waitLog(t, dir, "runner: ready", 1)
	// A new daemon adopts it from the journal's handle and asks it to stop.
	if err := newTestLauncher(t, root).Stop(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if exit := waitExit(t, dir); exit.ExitCode != 42 || !exit.StopRequested {
		t.Fatalf("exit = %+v", exit)
	}
}

// Processes a finished runner leaves in its process group do not outlive the attempt.
func TestShimSweepsRunnerLeftovers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := newRuntimeDir(t, root, "orphan")
	startTestRunner(t, newTestLauncher(t, root), dir, map[string]string{"MODE": "orphan"})
	if exit := waitExit(t, dir); exit.ExitCode != 0 {
		t.Fatalf("exit = %+v", exit)
	}
	log := readLog(t, dir)
	i := strings.Index(log, "runner: orphan=")
	if i < 0 {
		t.Fatalf("no orphan pid in the log:\n%s", log)
	}
	pid, err := strconv.Atoi(strings.Fields(log[i+len("runner: orphan="):])[0])
	if err != nil {
		t.Fatal(err)
	}
	livetest.Eventually(t, "the leftover sleep to be killed", func() bool {
		_, err := ProcessStartTime(pid)
		return errors.Is(err, ErrProcessNotFound)
	})
}

// Start gives up on a shim that never confirms, kills it, and says why.
func TestStartGivesUpOnSilentShim(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		exe     string
		args    []string
		timeout time.Duration
		ctxWait time.Duration
		want    string
	}{
		{"hangs past the start timeout", "/bin/sh", []string{"-c", "exec sleep 30", "sh"}, 300 * time.Millisecond, time.Minute, "no answer within 300ms"},
		{"hangs past the caller's deadline", "/bin/sh", []string{"-c", "exec sleep 30", "sh"}, time.Minute, 300 * time.Millisecond, "context deadline exceeded"},
		{"exits without a word", "/bin/true", []string{}, time.Minute, time.Minute, "exited without confirming start"},
		{"fails", "/bin/false", []string{}, time.Minute, time.Minute, "shim failed: exit status 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := newRuntimeDir(t, root, "silent")
			l, err := NewLauncher(LauncherOptions{RuntimeRoot: root, ShimExecutable: tt.exe, ShimArgs: tt.args,
				StartTimeout: tt.timeout, BaseEnv: []string{"PATH=" + os.Getenv("PATH")}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), tt.ctxWait)
			defer cancel()
			_, err = l.Start(ctx, Spec{AttemptID: "silent", RuntimeDir: dir, JITConfig: testJIT})
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), testJIT) {
				t.Fatalf("Start = %v, want error containing %q", err, tt.want)
			}
		})
	}
}
