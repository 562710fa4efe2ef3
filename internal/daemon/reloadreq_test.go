package daemon

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/status"
)

// reloadCLI runs `runner-manager reload` against the daemon's socket: its output and exit code.
func (e *env) reloadCLI() (stdout, stderr string, code int) {
	e.t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(e.t.Context(), binary, "reload", "--socket", status.SocketPath(e.stateDir))
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		e.t.Fatalf("runner-manager reload: %v", err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// unsettled is configText(targets) with a file watch that settles only after a minute: only
// `runner-manager reload` and SIGHUP apply an edit, so each outcome is theirs.
func (e *env) unsettled(targets string) string {
	return strings.Replace(e.configText(targets), "[daemon]\n", "[daemon]\nreload_settle = \"1m\"\n", 1)
}

// TestReloadCommand: `runner-manager reload` applies a valid edit at once and says what changed,
// refuses an invalid one saying why while the last good config keeps running, and says "not
// running" with its own exit code once the daemon is gone. SIGHUP still reloads beside it.
func TestReloadCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.writeRaw(e.unsettled(webTarget(1)))
	sighup := make(chan struct{}, 1)
	e.opts.Reload = sighup
	stop := e.startStoppable()

	for _, step := range []struct {
		name    string
		targets string
		code    int
		want    []string
		gen     int64
		ok      bool
	}{
		{"unchanged", webTarget(1), 0, []string{"reload applied: no change (config generation 1)"}, 1, true},
		{"valid edit", webTarget(2), 0, []string{"reload applied: config generation 2 runs now: changed web (max_runners)"}, 2, true},
		{"invalid edit", webTarget(0), 1, []string{"reload rejected: the last good config (generation 2) keeps running",
			e.configPath + ":27:", `target "web": max_runners must be at least 1`}, 2, false},
	} {
		e.writeRaw(e.unsettled(step.targets))
		out, errOut, code := e.reloadCLI()
		if code != step.code {
			t.Errorf("%s: reload exited %d, want %d\n%s%s", step.name, code, step.code, out, errOut)
		}
		for _, w := range step.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: reload printed %q, want %q in it", step.name, out, w)
			}
		}
		// The answer came after the reload: status already shows it.
		if snap, err := status.Fetch(t.Context(), status.SocketPath(e.stateDir)); err != nil || snap.Config.Generation != step.gen || snap.Config.LastReload.OK != step.ok {
			t.Errorf("%s: status config %+v (%v), want generation %d, last reload ok %v", step.name, snap.Config, err, step.gen, step.ok)
		}
	}

	e.writeRaw(e.unsettled(webTarget(3)))
	sighup <- struct{}{}
	e.waitStatus("the SIGHUP reload applied", func(s status.Snapshot) bool { return s.Config.LastReload.OK && s.Config.Generation == 3 })

	stop()
	out, errOut, code := e.reloadCLI()
	if code != 8 || !strings.Contains(errOut, "daemon not running") {
		t.Errorf("reload with no daemon: exit %d, stdout %q, stderr %q; want 8 and daemon not running", code, out, errOut)
	}
}
