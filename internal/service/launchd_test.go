package service

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/golden"
	"github.com/runner-manager/runner-manager/internal/heartbeat"
)

// The LaunchAgent's plist: the same job as the LaunchDaemon's (KeepAlive, AbandonProcessGroup,
// the stop timeout), its paths under the user's Library, and the state dir handed to the daemon,
// which would otherwise look in the config's default (/var/lib/runner-manager).
func TestLaunchAgentPlistGolden(t *testing.T) {
	p := AgentPaths("/Users/ci", 501)
	m := &Manager{System: Launchd, Paths: p}
	plist, err := m.Render("/opt/homebrew/bin/runner-manager")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/com.github.runner-manager.agent.plist", []byte(plist), *update)
	// The golden file pins the rest; these two a golden update must not lose silently.
	if !strings.Contains(plist, "<key>RUNNER_MANAGER_STATE_DIR</key>\n\t\t<string>/Users/ci/Library/Application Support/runner-manager</string>") {
		t.Error("the agent's plist does not give the daemon its state dir")
	}
	if !strings.Contains(plist, "<key>AbandonProcessGroup</key>\n\t<true/>") {
		t.Error("the agent's plist lets launchd kill the runners with the daemon")
	}
	daemon, err := (&Manager{System: Launchd, Paths: DefaultPaths(Launchd)}).Render("/usr/local/bin/runner-manager")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(daemon, "EnvironmentVariables") {
		t.Error("the LaunchDaemon's plist sets a state dir: its daemon must use the config's")
	}
}

func TestStateDirEnvIsTheConfigs(t *testing.T) {
	if want := config.EnvPrefix + "STATE_DIR"; stateDirEnv != want {
		t.Fatalf("the plist names %s, the config loader reads %s", stateDirEnv, want)
	}
}

// The launchctl command lines of each mode, from install to uninstall, in one golden file per
// mode: the LaunchDaemon in the system domain, the LaunchAgent in gui/<uid>.
func TestLaunchctlSequences(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths func(root string) Paths
	}{
		{"daemon", func(string) Paths { return DefaultPaths(Launchd) }},
		{"agent", func(string) Paths { return AgentPaths("/Users/ci", 501) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, fm, src := testHost(t, Launchd, "v1.2.3")
			root := m.Paths.Root
			m.Paths = tc.paths(root)
			m.Paths.Root = root
			fm.replies["launchctl print "+m.launchdTarget()] = "state = running\npid = 812\n"
			var log strings.Builder
			step := func(what string, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				fmt.Fprintf(&log, "# %s\n", what)
				for _, c := range fm.got() {
					fmt.Fprintln(&log, c)
				}
				fm.calls = nil
			}
			rec, err := m.Install(t.Context(), src)
			step("service install", err)
			if want := m.Paths.UnitFile(Launchd); rec.Unit != want {
				t.Errorf("installed %s, want %s", rec.Unit, want)
			}
			step("service start", m.Start(t.Context()))
			st := m.Status(t.Context(), nil)
			step("service status", nil)
			if st.Active != "running" || st.PID != 812 {
				t.Errorf("status = %q pid %d, want running 812", st.Active, st.PID)
			}
			step("service stop", m.Stop(t.Context()))
			_, err = m.Uninstall(t.Context())
			step("service uninstall", err)
			golden.Check(t, "testdata/launchctl-"+tc.name+".golden", []byte(log.String()), *update)
		})
	}
}

// A LaunchAgent install needs no root: a permission error is not answered with "use sudo".
func TestAgentInstallDoesNotSaySudo(t *testing.T) {
	m, fm, src := testHost(t, Launchd, "v1.2.3")
	root := m.Paths.Root
	m.Paths = AgentPaths("/Users/ci", 501)
	m.Paths.Root = root
	fm.fail["launchctl enable gui/501/"+LaunchdLabel] = fmt.Errorf("connect: %w", errors.ErrUnsupported)
	if _, err := m.Install(t.Context(), src); err == nil || strings.Contains(err.Error(), "sudo") {
		t.Fatalf("agent Install = %v, want a failure without the sudo hint", err)
	}
	if !exists(t, filepath.Join(root, "/Users/ci/Library/LaunchAgents", LaunchdLabel+".plist")) {
		t.Fatal("the agent's plist is not in ~/Library/LaunchAgents")
	}
}

// Under launchd the verdict names launchctl and the plist's log, never systemctl or journalctl,
// and a LaunchAgent's names --user and the gui domain, never sudo.
func TestVerdictUnderLaunchd(t *testing.T) {
	now := fixedNow()
	stalled := heartbeat.Record{PID: 7, Time: now.Add(-heartbeat.StaleAfter - time.Second)}
	for _, tc := range []struct {
		s    Status
		want string
	}{
		{Status{System: Launchd}, "not installed: run `sudo runner-manager service install`"},
		{Status{System: Launchd, Agent: true}, "not installed: run `runner-manager service install --user`"},
		{Status{System: Launchd, Installed: true, Active: "not running"}, "stopped: start it with `sudo runner-manager service start`"},
		{Status{System: Launchd, Agent: true, Installed: true, Active: "not running"}, "stopped: start it with `runner-manager service start --user`"},
		{Status{System: Launchd, Installed: true, Active: "running", PID: 7, Heartbeat: stalled},
			"stalled: the daemon made no progress for 1m31s (heartbeat); restart it with `sudo launchctl kickstart -k system/com.github.runner-manager`; see `tail /var/log/runner-manager.log`"},
		{Status{System: Launchd, Agent: true, Installed: true, Active: "running", PID: 7, Heartbeat: stalled},
			"stalled: the daemon made no progress for 1m31s (heartbeat); restart it with `launchctl kickstart -k gui/<uid>/com.github.runner-manager`; see `tail ~/Library/Logs/runner-manager.log`"},
	} {
		if got := tc.s.Verdict(now); got != tc.want {
			t.Errorf("Verdict(%+v)\n got %q\nwant %q", tc.s, got, tc.want)
		}
	}
}
