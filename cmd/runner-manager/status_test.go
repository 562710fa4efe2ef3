package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/internal/golden"
	"github.com/runner-manager/runner-manager/internal/status"
)

var statusNow = time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)

func statusFixture() status.Snapshot {
	ago := func(d time.Duration) time.Time { return statusNow.Add(-d) }
	return status.Snapshot{
		Version: "0.3.1", PID: 4242, StartedAt: ago(3 * time.Hour), MaxRunners: 4,
		Config: status.Config{Generation: 2, Path: "/etc/runner-manager/config.toml",
			LastReload: status.Reload{OK: false, At: ago(30 * time.Second), Error: []string{
				`/etc/runner-manager/config.toml:9:15: target "web": max_runners must be at least 1, got 0`}}},
		GitHubLastContact: ago(7 * time.Second),
		// Two accounts: status shows each one's plan (github_polling_by_account).
		GitHubPolling: &status.Polling{PointsPerMinute: 600, NeedPerMinute: 6, Stretch: 1, UsedPerMinute: 9},
		GitHubPollingByAccount: map[string]*status.Polling{
			"default": {PointsPerMinute: 600, NeedPerMinute: 6, Stretch: 1, UsedPerMinute: 4},
			"globex":  {PointsPerMinute: 60, NeedPerMinute: 12, Stretch: 1, UsedPerMinute: 5},
		},
		Targets: []status.Target{{Name: "web", Scope: "repo:acme/web", Mode: "autoscale", Enabled: true,
			Demand: 1, Owned: 2, Busy: 1, Idle: 1, MaxRunners: 3}},
		Runners: []status.Runner{
			{ID: 7, Name: "rm-web-0002", Target: "web", State: "started", StartedAt: ago(50 * time.Second)},
			{ID: 6, Name: "rm-web-0001", Target: "web", State: "busy", StartedAt: ago(4 * time.Minute), JobID: 99, JobName: "build"},
		},
		Events: []status.Event{{At: ago(30 * time.Second), Kind: "config_rejected", Message: "kept generation 2"}},
	}
}

// serveStatus serves snap on the status socket of a fresh state dir, for the rest of the test.
func serveStatus(t *testing.T, snap status.Snapshot) (stateDir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "rmcli") // short: unix socket paths are limited to ~104 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Cleanup(serveStatusAt(t, status.SocketPath(dir), snap))
	return dir
}

// serveStatusAt serves snap on socket until the returned stop is called.
func serveStatusAt(t *testing.T, socket string, snap status.Snapshot) (stop func()) {
	t.Helper()
	l, err := status.Listen(t.Context(), socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- l.Serve(ctx, status.SourceFunc(func(context.Context) (status.Snapshot, error) { return snap, nil }), nil)
	}()
	return func() { cancel(); <-done }
}

// runStatusCmd runs one of the two commands (built with a fixed clock) under a root configured
// as newRootCmd's, and returns stdout, stderr and the exit code as main would.
func runStatusCmd(t *testing.T, cmd *cobra.Command, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	root := &cobra.Command{Use: "runner-manager", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(cmd)
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs(append([]string{cmd.Name()}, args...))
	code := exitOK
	if err := root.ExecuteContext(t.Context()); err != nil {
		code = exitUsage
		if ee, ok := errors.AsType[*exitError](err); ok {
			code = ee.code
		}
		stderr.WriteString("runner-manager: " + err.Error() + "\n")
	}
	return stdout.String(), stderr.String(), code
}

func writeConfig(t *testing.T, stateDir, statusListen string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := "[daemon]\nstate_dir = \"" + stateDir + "\"\nstatus_listen = \"" + statusListen + "\"\n" +
		"[github]\ntoken_file = \"token\"\n[[target]]\nname = \"web\"\nrepository = \"acme/web\"\n"
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStatusAndRunnersGolden(t *testing.T) {
	stateDir := serveStatus(t, statusFixture())
	cfg := writeConfig(t, stateDir, "unix")
	socket := status.SocketPath(stateDir)
	clock := func() time.Time { return statusNow }
	for _, tc := range []struct {
		golden string
		cmd    *cobra.Command
		args   []string
	}{
		{"status.golden", statusCmd(clock), []string{"--config", cfg}},
		{"status-json.golden", statusCmd(clock), []string{"--socket", socket, "--json"}},
		{"runners.golden", runnersCmd(clock), []string{"--config", cfg}},
		{"runners-json.golden", runnersCmd(clock), []string{"--socket", socket, "--json"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, errOut, code := runStatusCmd(t, tc.cmd, tc.args...)
			if code != exitOK || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			golden.Check(t, filepath.Join("testdata", "status", tc.golden), []byte(out), *update)
		})
	}
}

func TestStatusWhenDaemonNotRunning(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "status.sock")
	for _, tc := range []struct {
		name string
		cmd  *cobra.Command
		args []string
		want []string
	}{
		{"status, no socket", statusCmd(time.Now), []string{"--socket", socket},
			[]string{"daemon not running (no socket at " + socket + ")"}},
		{"runners, no socket", runnersCmd(time.Now), []string{"--socket", socket, "--json"},
			[]string{"daemon not running (no socket at " + socket + ")"}},
		{"state_dir from the config", statusCmd(time.Now), []string{"--config", writeConfig(t, dir, "unix")},
			[]string{"daemon not running (no socket at " + socket + ")"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runStatusCmd(t, tc.cmd, tc.args...)
			if code != exitFailure || out != "" {
				t.Errorf("exit %d stdout %q, want exit %d and no output", code, out, exitFailure)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}

// TestStatusWithInvalidConfigFindsDaemon: an operator who just broke the config runs status to
// see the rejection; the CLI must still reach the daemon, through RUNNER_MANAGER_STATE_DIR or, with
// no environment override, the rejected file's own state_dir.
func TestStatusWithInvalidConfigFindsDaemon(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      bool   // the daemon's state directory is in RUNNER_MANAGER_STATE_DIR
		stateDir bool   // the rejected file names the daemon's state_dir
		note     string // what stderr says, after the state directory's path is appended
	}{
		{"environment", true, false, "is invalid (the daemon keeps running its last good config); looking for the daemon in "},
		{"the file's state_dir", false, true, "looking for the daemon in "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stateDir := serveStatus(t, statusFixture())
			if tc.env {
				t.Setenv("RUNNER_MANAGER_STATE_DIR", stateDir)
			}
			cfg := "[daemon]\nmax_runners = 0\n"
			if tc.stateDir {
				cfg = "[daemon]\nstate_dir = \"" + stateDir + "\"\nmax_runners = 0\n"
			}
			bad := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(bad, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runStatusCmd(t, statusCmd(func() time.Time { return statusNow }), "--config", bad)
			if code != exitOK {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if !strings.Contains(errOut, tc.note+stateDir) {
				t.Errorf("stderr %q lacks %q", errOut, tc.note+stateDir)
			}
			if !strings.Contains(out, "last reload FAILED 30s ago") {
				t.Errorf("stdout lacks the reload failure:\n%s", out)
			}
		})
	}
}

func TestStatusCommandsAreRegistered(t *testing.T) {
	for _, name := range []string{"status", "runners"} {
		if c, _, err := newRootCmd().Find([]string{name}); err != nil || c.Name() != name {
			t.Errorf("root has no %q subcommand: %v", name, err)
		}
	}
}

// TestTopNeedsATerminal: without a terminal top says what to do instead of failing inside the
// TUI library (it used to print escape codes and "error creating cancel reader").
func TestTopNeedsATerminal(t *testing.T) {
	_, errOut, code := execute(t, "top", "--socket", "/nonexistent.sock")
	if code != exitFailure || !strings.Contains(errOut, "top needs a terminal") {
		t.Fatalf("top without a terminal: exit %d, stderr:\n%s", code, errOut)
	}
}
