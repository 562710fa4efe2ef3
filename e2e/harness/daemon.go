package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/status"
)

// StartTimeout bounds how long a daemon may take to print `daemon running (pid N)`.
const StartTimeout = 60 * time.Second

var readyLine = regexp.MustCompile(`^daemon running \(pid (\d+)\)`)

// Daemon is one `runner-manager daemon` process of a test.
type Daemon struct {
	Bin        string
	ConfigPath string
	StateDir   string
	PID        int
	StdoutPath string // stdout, copied line by line
	StderrPath string // stderr: the daemon's JSON log

	t    testing.TB
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and its output is drained

	mu     sync.Mutex
	stdout strings.Builder
	code   int // exit code once done (-1: killed by a signal)
}

// StartDaemon runs the built binary as `runner-manager daemon --config cfgPath` with the test
// process's environment minus RUNNER_MANAGER_* plus env ("KEY=value"), and waits for it to print
// `daemon running (pid N)`. The config must be valid (its state_dir is read from it). When the test
// ends, a daemon still running is killed, and so is any runner process under its state directory.
func StartDaemon(t testing.TB, cfgPath string, env ...string) *Daemon {
	t.Helper()
	d := launch(t, cfgPath, env)
	poll(StartTimeout, func() bool { return d.readyPID() != 0 || d.Exited() })
	if d.Exited() && d.readyPID() == 0 {
		t.Fatalf("daemon exited with code %d before it was running:\n%s", d.exitCode(), d.tails())
	}
	if d.readyPID() == 0 {
		t.Fatalf("daemon did not print `daemon running` within %s:\n%s", StartTimeout, d.tails())
	}
	return d
}

// launch starts the process and its output copiers without waiting for readiness.
func launch(t testing.TB, cfgPath string, env []string) *Daemon {
	t.Helper()
	bin := Build(t)
	abs, err := filepath.Abs(cfgPath)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	cfg, err := config.LoadWith(abs, config.Options{Environ: func() []string { return env }})
	if err != nil {
		t.Fatalf("harness: StartDaemon needs a valid config to find its state_dir: %v", err)
	}
	logDir := t.TempDir()
	d := &Daemon{Bin: bin, ConfigPath: abs, StateDir: cfg.Daemon.StateDir, t: t, done: make(chan struct{}),
		StdoutPath: filepath.Join(logDir, "daemon.stdout"), StderrPath: filepath.Join(logDir, "daemon.stderr")}
	stdoutFile, err := os.Create(d.StdoutPath)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	stderrFile, err := os.Create(d.StderrPath)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	d.cmd = exec.Command(bin, "daemon", "--config", abs)
	d.cmd.Env = append(cleanEnviron(), env...)
	d.cmd.Stderr = stderrFile
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("harness: start %s: %v", bin, err)
	}
	var copying sync.WaitGroup
	copying.Add(1)
	go func() {
		defer copying.Done()
		d.copyStdout(pipe, stdoutFile)
	}()
	go func() {
		copying.Wait() // Wait closes the pipe: read it to the end first
		err := d.cmd.Wait()
		code := d.cmd.ProcessState.ExitCode()
		if err != nil && code == 0 {
			code = -1
		}
		d.mu.Lock()
		d.code = code
		d.mu.Unlock()
		stdoutFile.Close()
		stderrFile.Close()
		close(d.done)
	}()
	t.Cleanup(d.cleanup)
	return d
}

func (d *Daemon) copyStdout(pipe io.Reader, file *os.File) {
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(file, line)
		d.mu.Lock()
		d.stdout.WriteString(line + "\n")
		if m := readyLine.FindStringSubmatch(line); m != nil && d.PID == 0 {
			d.PID, _ = strconv.Atoi(m[1])
		}
		d.mu.Unlock()
	}
	_, _ = io.Copy(file, pipe)
}

// cleanEnviron is the test's environment without RUNNER_MANAGER_* overrides of the config.
func cleanEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, config.EnvPrefix) {
			out = append(out, kv)
		}
	}
	return out
}

func (d *Daemon) readyPID() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.PID
}

func (d *Daemon) exitCode() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.code
}

// Exited reports whether the daemon process has ended.
func (d *Daemon) Exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the daemon.
func (d *Daemon) Signal(sig syscall.Signal) {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		d.t.Fatalf("harness: signal %s to the daemon: %v", sig, err)
	}
}

// Wait waits up to timeout for the daemon to exit and returns its exit code (-1 when a signal
// killed it) and everything it printed on stdout. It fails the test (killing the daemon) on timeout.
func (d *Daemon) Wait(t testing.TB, timeout time.Duration) (int, string) {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(timeout):
		d.kill()
		t.Fatalf("daemon did not exit within %s:\n%s", timeout, d.tails())
	}
	return d.exitCode(), d.Stdout()
}

// Kill9 SIGKILLs the daemon alone (not its runners, which live in their own sessions) and waits for it.
func (d *Daemon) Kill9() {
	d.kill()
}

func (d *Daemon) kill() {
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// Stdout is what the daemon printed on stdout so far.
func (d *Daemon) Stdout() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stdout.String()
}

// Stderr is the daemon's log so far.
func (d *Daemon) Stderr() string {
	data, _ := os.ReadFile(d.StderrPath)
	return string(data)
}

// Status fetches the daemon's status document from the socket in its state directory.
func (d *Daemon) Status(t testing.TB) status.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := status.Fetch(ctx, status.SocketPath(d.StateDir))
	if err != nil {
		t.Fatalf("harness: daemon status: %v", err)
	}
	return s
}

// cleanup runs when the test ends: nothing the daemon started may outlive the test.
func (d *Daemon) cleanup() {
	if !d.Exited() {
		d.kill()
	}
	KillRunnerProcesses(d.StateDir)
	if d.t.Failed() {
		d.t.Logf("daemon (config %s) output:\n%s", d.ConfigPath, d.tails())
	}
}

// tailLines bounds how much of the daemon's output a failure prints.
const tailLines = 150

func (d *Daemon) tails() string {
	return "--- stdout ---\n" + tail(d.Stdout(), tailLines) + "--- stderr (log) ---\n" + tail(d.Stderr(), tailLines)
}

func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d earlier lines]\n", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "")
}
