//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
	"github.com/runner-manager/runner-manager/internal/status"
)

// TestFailedRunnerDiagnosticsShown is issue 30 item 4 on the real binary: a runner launched for
// a job fails (it exits 1 once connected); the daemon keeps its shim log and its _diag log before it
// removes the runner's directory, `runner-manager runners --failed` lists the attempt with the
// command to run, `runner-manager logs ATTEMPT-ID` shows both logs, and status names the target's
// last failure. Before, the directory went with everything in it and the operator saw "exited
// with status 1" and nothing more.
func TestFailedRunnerDiagnosticsShown(t *testing.T) {
	t.Parallel()
	sim, cfg := simWithA(t, 1, nil)
	sim.SetRunnerFault(runnerproto.AllRunners, runnerproto.FaultExitAtStart)
	d := harness.StartDaemon(t, cfg.Write(t))
	mark := d.Mark()
	sim.MustQueue(t, "acme/a", labels, 2*time.Second)
	kept := d.WaitRecord(t, mark, eventTimeout, "the failed runner's diagnostics kept", func(l harness.LogLine) bool {
		return l.Msg == "kept the diagnostics of a failed runner" && l.Attempt != ""
	})
	sim.SetRunnerFault(runnerproto.AllRunners, "")
	socket := status.SocketPath(cfg.StateDir)
	cli := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out, errb bytes.Buffer
		cmd := exec.CommandContext(ctx, d.Bin, append(args, "--socket", socket)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("runner-manager %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String()
	}

	var failed status.FailureList
	if err := json.Unmarshal([]byte(cli("runners", "--failed", "--json")), &failed); err != nil {
		t.Fatal(err)
	}
	if len(failed.Failures) == 0 || failed.Failures[0].Attempt != kept.Attempt || failed.Failures[0].Target != "a" ||
		failed.Failures[0].Command != "runner-manager logs "+kept.Attempt {
		t.Fatalf("runners --failed = %+v; want attempt %s of target a first, with its logs command", failed.Failures, kept.Attempt)
	}
	if text := cli("runners", "--failed"); !strings.Contains(text, kept.Attempt) || !strings.Contains(text, "exited with status 1") {
		t.Errorf("runners --failed text lacks the attempt or its reason:\n%s", text)
	}

	logs := cli("logs", kept.Attempt)
	for _, want := range []string{
		"==> shim/runner.log <==", "fakerunner: exiting at start (fault)", // the shim's log: the runner's stderr
		"==> runner/Runner_", " starting", "runner exiting with status 1", // the runner's own _diag log
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("runner-manager logs %s lacks %q:\n%s", kept.Attempt, want, logs)
		}
	}

	var last *status.Failure
	for _, tg := range d.Status(t).Targets {
		if tg.Name == "a" {
			last = tg.LastFailure
		}
	}
	if last == nil || last.Command != "runner-manager logs "+last.Attempt {
		t.Errorf("status does not link target a's last failure to its logs: %+v", last)
	}
	if text := cli("status"); !strings.Contains(text, "a: last failure") || !strings.Contains(text, "runner-manager logs ") {
		t.Errorf("status text does not name the last failure:\n%s", text)
	}
	stopWithinBound(t, d, sim, cfg)
}
