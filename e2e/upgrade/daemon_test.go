//go:build e2e

package upgrade

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/status"
)

// service is one start of the private binary as a service manager runs it:
// `<private> daemon --config C --upgrade-source S`. harness.StartDaemon always runs the harness's
// own build without extra flags, so the upgrade test launches the process itself; logs, waiting,
// leak checks and runner clean-up still come from the harness.
type service struct {
	t          testing.TB
	bin        string
	stateDir   string
	stdoutPath string
	stderrPath string
	cmd        *exec.Cmd
	done       chan struct{}

	mu   sync.Mutex
	code int // exit code once done; -1 when a signal ended it
}

// startService starts bin as the daemon of cfg watching source, and waits for `daemon running`.
// When the test ends, a process still running is killed, and so is every runner under the state dir.
func startService(t testing.TB, bin string, cfg *harness.Config, source string) *service {
	t.Helper()
	logDir := t.TempDir()
	s := &service{t: t, bin: bin, stateDir: cfg.StateDir, done: make(chan struct{}),
		stdoutPath: filepath.Join(logDir, "daemon.stdout"), stderrPath: filepath.Join(logDir, "daemon.stderr")}
	stdout, err := os.Create(s.stdoutPath)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(s.stderrPath)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(bin, "daemon", "--config", cfg.Path, "--upgrade-source", source, "--upgrade-poll-interval", watchPoll.String())
	s.cmd.Env = environ()
	s.cmd.Stdout, s.cmd.Stderr = stdout, stderr
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		err := s.cmd.Wait()
		code := s.cmd.ProcessState.ExitCode()
		if err != nil && code == 0 {
			code = -1
		}
		s.mu.Lock()
		s.code = code
		s.mu.Unlock()
		stdout.Close()
		stderr.Close()
		close(s.done)
	}()
	t.Cleanup(s.cleanup)
	if !harness.Poll(harness.StartTimeout, func() bool { return strings.Contains(s.stdout(), "daemon running (pid ") || s.exited() }) ||
		s.exited() {
		t.Fatalf("%s did not print `daemon running` (exited: %v, code %d); its output follows", bin, s.exited(), s.exitCode())
	}
	t.Logf("%s daemon %s running", time.Now().Format("15:04:05.000"), bin)
	return s
}

// environ is the test's environment without RUNNER_MANAGER_* overrides of the config.
func environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, config.EnvPrefix) {
			out = append(out, kv)
		}
	}
	return out
}

func (s *service) cleanup() {
	if !s.exited() {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.done
	}
	harness.KillRunnerProcesses(s.stateDir)
	if s.t.Failed() {
		s.t.Logf("daemon %s output:\n%s", s.bin, s.output())
	}
}

func (s *service) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *service) exitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code
}

// wait waits up to timeout for the process to exit and returns its exit code.
func (s *service) wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(timeout):
		t.Fatalf("daemon %s did not exit within %s", s.bin, timeout)
	}
	return s.exitCode()
}

func (s *service) stop(t testing.TB) int {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM the daemon: %v", err)
	}
	return s.wait(t, 30*time.Second)
}

func (s *service) stdout() string {
	data, _ := os.ReadFile(s.stdoutPath)
	return string(data)
}

func (s *service) logs() []harness.LogLine {
	data, _ := os.ReadFile(s.stderrPath)
	return harness.ParseLog(string(data))
}

// mark is the number of log records written so far; waitMsg looks only at later ones.
func (s *service) mark() int { return len(s.logs()) }

// waitMsg waits for a log record after mark whose message is msg, and returns it. It gives up
// early, failing, when the daemon exits without writing it.
func (s *service) waitMsg(t testing.TB, mark int, msg string, timeout time.Duration) harness.LogLine {
	t.Helper()
	var found harness.LogLine
	harness.Poll(timeout, func() bool {
		found = s.findMsg(mark, msg)
		return found.Raw != "" || s.exited()
	})
	if found.Raw == "" {
		found = s.findMsg(mark, msg) // written just before the exit
	}
	if found.Raw == "" {
		t.Fatalf("no log record %q within %s (daemon exited: %v)", msg, timeout, s.exited())
	}
	t.Logf("%s daemon logged %q", found.Time.Format("15:04:05.000"), msg)
	return found
}

func (s *service) findMsg(mark int, msg string) harness.LogLine {
	logs := s.logs()
	for i := min(mark, len(logs)); i < len(logs); i++ {
		if logs[i].Msg == msg {
			return logs[i]
		}
	}
	return harness.LogLine{}
}

// snapshot reads the daemon's status socket directly.
func (s *service) snapshot(t testing.TB) status.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap, err := status.Fetch(ctx, status.SocketPath(s.stateDir))
	if err != nil {
		t.Fatalf("daemon status: %v", err)
	}
	return snap
}

func (s *service) output() string {
	data, _ := os.ReadFile(s.stderrPath)
	return "--- stdout ---\n" + s.stdout() + "--- stderr (log) ---\n" + string(data)
}

// statusCLI runs `<bin> status --config C --json`, the operator's view, and decodes it.
func statusCLI(t testing.TB, bin string, cfg *harness.Config) status.Snapshot {
	t.Helper()
	cmd := exec.Command(bin, "status", "--config", cfg.Path, "--json")
	cmd.Env = environ()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s status --json: %v\n%s", bin, err, out)
	}
	var snap status.Snapshot
	if err := json.Unmarshal(out, &snap); err != nil {
		t.Fatalf("%s status --json printed something that is not a status document: %v\n%s", bin, err, out)
	}
	return snap
}
