package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/golden"
	"github.com/runner-manager/runner-manager/internal/livetest"
	"github.com/runner-manager/runner-manager/internal/service"
	"github.com/runner-manager/runner-manager/internal/status"
	"github.com/runner-manager/runner-manager/selfupdate/selfupdatetest"
)

// installFakeSource builds selfupdate's stand-in binary (version 1.2.3) at /usr/local/bin in a
// fresh root and returns the root.
func installFakeSource(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	bin := filepath.Join(root, "usr", "local", "bin")
	if err := selfupdatetest.Build(bin, "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(bin, "v1.2.3"), filepath.Join(bin, "runner-manager")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestServiceInstallStatusUninstallUnderRoot(t *testing.T) {
	root := installFakeSource(t)
	clock := func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }
	steps := []struct {
		golden string
		args   []string
		code   int
	}{
		{"install.golden", []string{"install", "--root", root, "--source", "/usr/local/bin/runner-manager"}, exitOK},
		{"status-installed.golden", []string{"status", "--root", root}, exitFailure},
		{"uninstall.golden", []string{"uninstall", "--root", root}, exitOK},
		{"status-uninstalled.golden", []string{"status", "--root", root}, exitFailure},
	}
	for _, s := range steps {
		out, errOut, code := runStatusCmd(t, serviceCmd(clock), s.args...)
		if code != s.code {
			t.Fatalf("service %s: exit %d, want %d; stderr:\n%s", s.args[0], code, s.code, errOut)
		}
		golden.Check(t, filepath.Join("testdata", "service", s.golden), []byte(strings.ReplaceAll(out+errOut, root, "$ROOT")), *update)
	}
	if _, err := os.Stat(filepath.Join(root, "var", "lib", "runner-manager")); err != nil {
		t.Errorf("uninstall removed the state directory: %v", err)
	}
}

func TestServiceCommandIsRegistered(t *testing.T) {
	out, _, code := execute(t, "service", "--help")
	if code != exitOK || !strings.Contains(out, "install") || !strings.Contains(out, "status") {
		t.Fatalf("service --help: exit %d\n%s", code, out)
	}
}

// TestServiceUnit prints the unit for a config with a 5 m drain: the stop timeout follows it, the
// unit is Type=notify, and systemd-analyze verify accepts it (ExecStart's program exists under --root).
func TestServiceUnit(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "config.toml", "[daemon]\nshutdown_drain_timeout = \"5m\"\n", 0o600)
	stdout, stderr, code := execute(t, "service", "unit", "--config", cfg, "--source", "/usr/local/bin/runner-manager")
	if code != exitOK {
		t.Fatalf("service unit: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"\nType=notify\n", "\nNotifyAccess=main\n", "\nTimeoutStopSec=330s\n", " daemon --config " + cfg + " "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("unit lacks %q:\n%s", strings.TrimSpace(want), stdout)
		}
	}
	stdout, _, _ = execute(t, "service", "unit", "--config", filepath.Join(dir, "absent.toml"), "--source", "/usr/local/bin/runner-manager")
	if !strings.Contains(stdout, "\nTimeoutStopSec=90s\n") {
		t.Errorf("without a config the stop timeout is not the default drain + 30 s:\n%s", stdout)
	}
	bad := writeFile(t, dir, "bad.toml", "[daemon]\nmax_runners = 0\n", 0o600)
	if _, _, code := execute(t, "service", "unit", "--config", bad, "--source", "/usr/local/bin/runner-manager"); code != exitFailure {
		t.Errorf("service unit on an invalid config: exit %d, want 1", code)
	}

	tool := livetest.Tool(t, "systemd-analyze", "run `make tools` (Debian package systemd)")
	// The unit's programs, as absolute paths that exist here.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := strings.Replace(stdout, "ExecStart=/var/lib/runner-manager/bin/runner-manager ", "ExecStart="+self+" ", 1)
	path := writeFile(t, dir, "runner-manager.service", unit, 0o644)
	out, err := exec.Command(tool, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s\n%s", err, out, unit)
	}
}

// TestConfigInit writes the starter file, which validates as it is, and refuses to overwrite it.
func TestConfigInit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etc", "config.toml")
	if _, stderr, code := execute(t, "config", "init", "--config", path); code != exitOK {
		t.Fatalf("config init: exit %d: %s", code, stderr)
	}
	if stdout, _, code := execute(t, "validate", "--offline", path); code != exitOK {
		t.Fatalf("the starter config is invalid: %s", stdout)
	}
	if _, stderr, code := execute(t, "config", "init", "--config", path); code != exitUsage || !strings.Contains(stderr, "already exists") {
		t.Fatalf("second config init: exit %d, %q; want 2 and no overwrite", code, stderr)
	}
	if _, _, code := execute(t, "config", "init", "--config", path, "--force"); code != exitOK {
		t.Fatalf("config init --force: exit %d", code)
	}
}

// TestServiceUninstallRefusesWhileBusy: the packages' removal script runs uninstall --refuse-busy,
// which must change nothing while the daemon reports a busy runner, and uninstall once none is.
func TestServiceUninstallRefusesWhileBusy(t *testing.T) {
	root, err := os.MkdirTemp("", "rmpkg") // short: the status socket's path is limited to ~104 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := selfupdatetest.Build(filepath.Join(root, "usr", "bin"), "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "usr", "bin", "v1.2.3"), filepath.Join(root, "usr", "bin", "runner-manager")); err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return statusNow }
	if _, errOut, code := runStatusCmd(t, serviceCmd(clock), "install", "--root", root, "--source", "/usr/bin/runner-manager"); code != exitOK {
		t.Fatalf("install: exit %d\n%s", code, errOut)
	}
	unit := filepath.Join(root, "etc", "systemd", "system", "runner-manager.service")
	stateDir := filepath.Join(root, "var", "lib", "runner-manager")
	busy := statusFixture()
	for _, tc := range []struct {
		name    string
		targets []status.Target
		code    int
		want    string
	}{
		{"one busy", busy.Targets, exitFailure, "1 runner(s) busy with jobs; nothing was changed"},
		{"none busy", []status.Target{{Name: "web", Idle: 1}}, exitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := busy
			snap.Targets = tc.targets
			stop := serveStatusAt(t, status.SocketPath(stateDir), snap)
			defer stop()
			_, errOut, code := runStatusCmd(t, serviceCmd(clock), "uninstall", "--root", root, "--refuse-busy")
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Fatalf("uninstall --refuse-busy: exit %d, want %d with %q; stderr:\n%s", code, tc.code, tc.want, errOut)
			}
			_, err := os.Stat(unit)
			if installed := err == nil; installed != (tc.code != exitOK) {
				t.Fatalf("unit present = %v after exit %d", installed, code)
			}
		})
	}
}

// `service --user` on a Mac (launchd, chosen here on Linux): install writes the LaunchAgent in the
// user's Library with its config and state there and no runner users, status and uninstall find
// it there. The golden files hold the output, launchctl's skipped calls in gui/<uid> included.
func TestServiceUserInstallsALaunchAgent(t *testing.T) {
	root := installFakeSource(t)
	t.Setenv("HOME", "/Users/ci")
	clock := func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }
	for _, s := range []struct {
		golden string
		args   []string
		code   int
	}{
		{"install-agent.golden", []string{"install", "--user", "--root", root, "--source", "/usr/local/bin/runner-manager"}, exitOK},
		{"status-agent.golden", []string{"status", "--user", "--root", root}, exitFailure},
		{"uninstall-agent.golden", []string{"uninstall", "--user", "--root", root}, exitOK},
	} {
		out, errOut, code := runStatusCmd(t, serviceCmdOn(service.Launchd, clock), s.args...)
		if code != s.code {
			t.Fatalf("service %s: exit %d, want %d; stderr:\n%s", s.args[0], code, s.code, errOut)
		}
		golden.Check(t, filepath.Join("testdata", "service", s.golden), []byte(strings.ReplaceAll(out+errOut, root, "$ROOT")), *update)
		if s.args[0] == "install" {
			plist := filepath.Join(root, "Users/ci/Library/LaunchAgents", service.LaunchdLabel+".plist")
			if _, err := os.Stat(plist); err != nil {
				t.Fatalf("no LaunchAgent plist: %v", err)
			}
		}
	}
}

// --user is refused where there is no user service (systemd, for now), and with a config that
// asks for per-slot runner users, which a LaunchAgent's daemon (not root) cannot run.
func TestServiceUserRefusals(t *testing.T) {
	root := installFakeSource(t)
	t.Setenv("HOME", "/Users/ci")
	_, errOut, code := runStatusCmd(t, serviceCmdOn(service.Systemd, time.Now), "install", "--user", "--root", root)
	if code != exitUsage || !strings.Contains(errOut, "systemd has no user service here yet") {
		t.Fatalf("install --user under systemd: exit %d, want %d and a refusal; stderr:\n%s", code, exitUsage, errOut)
	}
	dir := filepath.Join(root, "Users/ci/Library/Application Support/runner-manager")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "config.toml", "[daemon]\nrunner_user = \"per-slot\"\n", 0o600)
	_, errOut, code = runStatusCmd(t, serviceCmdOn(service.Launchd, time.Now), "install", "--user", "--root", root, "--source", "/usr/local/bin/runner-manager")
	if code != exitUsage || !strings.Contains(errOut, "cannot run runners as per-slot users") {
		t.Fatalf("install --user with a config asking for per-slot users: exit %d, want %d and a refusal; stderr:\n%s", code, exitUsage, errOut)
	}
}
