package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/daemonproc"
	"github.com/runner-manager/runner-manager/internal/status"
)

// StartTimeout bounds how long a daemon may take to report that it runs.
const StartTimeout = 60 * time.Second

// Daemon is one `runner-manager daemon` process of a test.
type Daemon struct {
	Bin        string
	ConfigPath string
	StateDir   string
	PID        int    // the pid the daemon's ready line names
	StdoutPath string // stdout, as written
	StderrPath string // stderr: the daemon's JSON log

	t    testing.TB
	proc *daemonproc.Daemon

	mu     sync.Mutex
	stdout strings.Builder
}

// DaemonOptions are the less common ways to start a daemon.
type DaemonOptions struct {
	Bin  string   // the binary; default the harness's build (Build)
	Args []string // flags after `daemon --config C`, e.g. --upgrade-source S
	Env  []string // "KEY=value" added to the test's environment minus RUNNER_MANAGER_*
}

// StartDaemon runs the harness's build as `runner-manager daemon --config cfgPath` with the test
// process's environment minus RUNNER_MANAGER_* plus env ("KEY=value"), and waits until it reports
// that it runs. The config must be valid (its state_dir is read from it). When the test ends, a
// daemon still running is killed, and so is any runner process under its state directory.
func StartDaemon(t testing.TB, cfgPath string, env ...string) *Daemon {
	t.Helper()
	return StartDaemonWith(t, cfgPath, DaemonOptions{Env: env})
}

// StartDaemonWith is StartDaemon with options (another binary, more flags).
func StartDaemonWith(t testing.TB, cfgPath string, o DaemonOptions) *Daemon {
	t.Helper()
	bin := o.Bin
	if bin == "" {
		bin = Build(t)
	}
	abs, err := filepath.Abs(cfgPath)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	cfg, err := config.LoadWith(abs, config.Options{Environ: func() []string { return o.Env }})
	if err != nil {
		t.Fatalf("harness: StartDaemon needs a valid config to find its state_dir: %v", err)
	}
	logDir := t.TempDir()
	d := &Daemon{Bin: bin, ConfigPath: abs, StateDir: cfg.Daemon.StateDir, t: t,
		StdoutPath: filepath.Join(logDir, "daemon.stdout"), StderrPath: filepath.Join(logDir, "daemon.stderr")}
	stdoutFile, err := os.Create(d.StdoutPath)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	stderrFile, err := os.Create(d.StderrPath)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	proc, err := daemonproc.StartDaemon(context.Background(), daemonproc.DaemonSpec{
		Bin: bin, Config: abs, Args: o.Args, Env: append(CleanEnviron(), o.Env...),
		Stdout: stdoutFile, Stderr: stderrFile,
		OnLine: func(_ daemonproc.Stream, line string) {
			d.mu.Lock()
			d.stdout.WriteString(line + "\n")
			d.mu.Unlock()
		},
	}, StartTimeout)
	if err != nil {
		stdoutFile.Close()
		stderrFile.Close()
		KillRunnerProcesses(d.StateDir)
		t.Fatalf("harness: %v:\n%s", err, d.failureOutput())
	}
	d.proc, d.PID = proc, proc.ReadyPID
	go func() {
		<-proc.Done()
		stdoutFile.Close()
		stderrFile.Close()
	}()
	t.Cleanup(d.cleanup)
	return d
}

// CleanEnviron is the test's environment without RUNNER_MANAGER_* overrides of the config.
func CleanEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, config.EnvPrefix) {
			out = append(out, kv)
		}
	}
	return out
}

// Exited reports whether the daemon process has ended.
func (d *Daemon) Exited() bool { return d.proc.Exited() }

// ExitCode is the daemon's exit code once it exited (-1: ended by a signal).
func (d *Daemon) ExitCode() int { return d.proc.ExitCode() }

// Signal sends sig to the daemon.
func (d *Daemon) Signal(sig syscall.Signal) {
	d.t.Helper()
	if err := d.proc.Signal(sig); err != nil {
		d.t.Fatalf("harness: %v", err)
	}
}

// Wait waits up to timeout for the daemon to exit and returns its exit code (-1 when a signal
// killed it) and everything it printed on stdout. It fails the test (killing the daemon) on timeout.
func (d *Daemon) Wait(t testing.TB, timeout time.Duration) (int, string) {
	t.Helper()
	code, err := d.proc.Wait(context.Background(), timeout)
	if err != nil {
		d.proc.Kill()
		t.Fatalf("harness: %v:\n%s", err, d.tails())
	}
	return code, d.Stdout()
}

// Stop sends SIGTERM and waits up to timeout for the exit; it returns the exit code.
func (d *Daemon) Stop(t testing.TB, timeout time.Duration) int {
	t.Helper()
	d.Signal(syscall.SIGTERM)
	code, _ := d.Wait(t, timeout)
	return code
}

// Kill9 SIGKILLs the daemon alone (not its runners, which live in their own sessions) and waits for it.
func (d *Daemon) Kill9() { d.proc.Kill() }

// Stdout is every line the daemon printed so far, of both streams in arrival order: its ready
// line and its "daemon stopped; ..." summary are log records (on stderr) like every other line.
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
		d.proc.Kill()
	}
	KillRunnerProcesses(d.StateDir)
	d.report()
}

// report prints the daemon's output if the test failed.
func (d *Daemon) report() {
	if d.t.Failed() {
		d.t.Logf("daemon %s (config %s) output:\n%s", d.Bin, d.ConfigPath, d.failureOutput())
	}
}

// tailLines bounds how much of the daemon's output a failure prints (KeepLogsEnv keeps it all).
const tailLines = 150

func (d *Daemon) tails() string {
	stdout, _ := os.ReadFile(d.StdoutPath)
	return "--- stdout ---\n" + tail(string(stdout), tailLines) + "--- stderr (log) ---\n" + tail(d.Stderr(), tailLines)
}

func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d earlier lines; %s=<dir> keeps them all]\n", len(lines)-n, KeepLogsEnv)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "")
}
