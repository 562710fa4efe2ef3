//go:build e2e

package upgrade

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/status"
)

// service is one start of the private binary as a service manager runs it:
// `<private> daemon --config C --upgrade-source S`, through the harness's one daemon starter.
type service struct{ *harness.Daemon }

// startService starts bin as the daemon of cfg watching source, and waits until it runs.
// When the test ends, a process still running is killed, and so is every runner under the state dir.
func startService(t testing.TB, bin string, cfg *harness.Config, source string) service {
	t.Helper()
	d := harness.StartDaemonWith(t, cfg.Path, harness.DaemonOptions{Bin: bin,
		Args: []string{"--upgrade-source", source, "--upgrade-poll-interval", watchPoll.String()}})
	t.Logf("%s daemon %s running", time.Now().Format("15:04:05.000"), bin)
	return service{d}
}

func (s service) exited() bool  { return s.Exited() }
func (s service) exitCode() int { return s.ExitCode() }
func (s service) stdout() string {
	return s.Stdout()
}

// wait waits up to timeout for the process to exit and returns its exit code.
func (s service) wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	code, _ := s.Wait(t, timeout)
	return code
}

func (s service) stop(t testing.TB) int {
	t.Helper()
	return s.Stop(t, 30*time.Second)
}

// mark is the position in the log after which waitMsg and findMsg look.
func (s service) mark() harness.LogMark { return s.Mark() }

// waitMsg waits for a log record after mark whose message is msg, and returns it. It gives up
// early, failing, when the daemon exits without writing it.
func (s service) waitMsg(t testing.TB, mark harness.LogMark, msg string, timeout time.Duration) harness.LogLine {
	t.Helper()
	found := s.WaitRecord(t, mark, timeout, fmt.Sprintf("the log record %q", msg), func(l harness.LogLine) bool { return l.Msg == msg })
	t.Logf("%s daemon logged %q", found.Time.Format("15:04:05.000"), msg)
	return found
}

func (s service) findMsg(mark harness.LogMark, msg string) harness.LogLine {
	for _, l := range s.LogsSince(mark) {
		if l.Msg == msg {
			return l
		}
	}
	return harness.LogLine{}
}

// snapshot reads the daemon's status socket directly.
func (s service) snapshot(t testing.TB) status.Snapshot {
	t.Helper()
	return s.Status(t)
}

// statusCLI runs `<bin> status --config C --json`, the operator's view, and decodes it.
func statusCLI(t testing.TB, bin string, cfg *harness.Config) status.Snapshot {
	t.Helper()
	cmd := exec.Command(bin, "status", "--config", cfg.Path, "--json")
	cmd.Env = harness.CleanEnviron()
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
