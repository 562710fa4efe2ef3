package service

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
	"github.com/runner-manager/runner-manager/internal/golden"
	"github.com/runner-manager/runner-manager/internal/heartbeat"
	"github.com/runner-manager/runner-manager/selfupdate"
)

type fakeSource struct {
	st  DaemonStatus
	err error
}

func (f fakeSource) DaemonStatus(context.Context) (DaemonStatus, error) { return f.st, f.err }

const showRunning = "LoadState=loaded\nActiveState=active\nSubState=running\nMainPID=4242\n"
const showStopped = "LoadState=loaded\nActiveState=inactive\nSubState=dead\nMainPID=0\n"

var showCmd = "systemctl show runner-manager.service --property=LoadState,ActiveState,SubState,MainPID"

func healthyDaemon() DaemonStatus {
	now := fixedNow()
	return DaemonStatus{Version: "1.2.3", ConfigPath: "/etc/runner-manager/config.toml", ReloadOK: true,
		ReloadAt: now.Add(-2 * time.Minute), LastGitHubContact: now.Add(-30 * time.Second), RunnersBusy: 2, RunnersIdle: 1}
}

// Each case renders `service status` for one situation against its golden file.
func TestStatusGolden(t *testing.T) {
	tests := []struct {
		name    string
		install bool
		source  string // variant dropped on the source path after the install ("" = unchanged)
		show    string
		src     StatusSource
		guard   *selfupdate.GuardState
		record  string        // replaces the install record's content
		beat    time.Duration // > 0: a heartbeat record of pid 4242 this long before now
	}{
		{name: "not-installed"},
		{name: "healthy", install: true, show: showRunning, src: fakeSource{st: healthyDaemon()}, beat: 10 * time.Second},
		{name: "stalled", install: true, show: showRunning, src: fakeSource{st: healthyDaemon()}, beat: 5 * time.Minute},
		{name: "upgrade-pending", install: true, source: "v1.2.4", show: showRunning, src: fakeSource{st: healthyDaemon()}},
		{name: "unreachable", install: true, show: showRunning},
		{name: "stopped", install: true, show: showStopped, src: fakeSource{err: errors.New("dial unix: no such file")}},
		{name: "reload-failed", install: true, show: showRunning, src: fakeSource{st: func() DaemonStatus {
			d := healthyDaemon()
			d.ReloadOK, d.ReloadError = false, "config.toml:12:3: target \"web\": max_runners must be >= 1"
			return d
		}()}},
		{name: "damaged-record", install: true, show: showRunning, src: fakeSource{st: healthyDaemon()}, record: "{\"source\": "},
		{name: "rolled-back", install: true, source: "v1.2.4", show: showRunning, src: fakeSource{st: healthyDaemon()},
			guard: &selfupdate.GuardState{Version: "1.2.3", Rejected: "1.2.4", RolledBackAt: fixedNow().Add(-time.Hour),
				RollbackWhy: "version 1.2.4 exited within 30s of starting 3 times in a row"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, fm, src := testHost(t, Systemd, "v1.2.3")
			if tt.install {
				if _, err := m.Install(t.Context(), src); err != nil {
					t.Fatal(err)
				}
			}
			if tt.source != "" {
				b, err := os.ReadFile(filepath.Join(fakeBins, tt.source))
				if err != nil {
					t.Fatal(err)
				}
				if err := atomicfile.Write(filepath.Join(m.Paths.Root, src), b, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tt.guard != nil {
				writeGuard(t, filepath.Join(m.Paths.Root, m.Paths.StateDir), *tt.guard)
			}
			if tt.record != "" {
				if err := os.WriteFile(filepath.Join(m.Paths.Root, m.Paths.StateDir, RecordFile), []byte(tt.record), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.beat > 0 {
				rec := heartbeat.Record{Time: fixedNow().Add(-tt.beat), PID: 4242, Generation: 3}
				if err := heartbeat.Write(filepath.Join(m.Paths.Root, m.Paths.StateDir), rec); err != nil {
					t.Fatal(err)
				}
			}
			fm.replies[showCmd] = tt.show
			var out strings.Builder
			if err := m.Status(t.Context(), tt.src).Render(&out, fixedNow()); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/status-"+tt.name+".golden", []byte(out.String()), *update)
		})
	}
}

func TestVerdict(t *testing.T) {
	now := fixedNow()
	running := Status{Installed: true, Active: "active (running)", PID: 7, SourceVersion: "1.2.3"}
	with := func(f func(*Status)) Status {
		s := running
		d := healthyDaemon()
		s.Daemon = &d
		f(&s)
		return s
	}
	tests := []struct {
		s    Status
		want string
	}{
		{Status{}, "not installed"},
		{with(func(s *Status) { s.BinaryErr = "exec format error" }), "broken"},
		{with(func(s *Status) { s.Active, s.PID = "", 0 }), "unknown: the service manager did not answer"},
		{with(func(s *Status) { s.Active, s.PID = "failed (exit-code)", 0 }), "failed"},
		{with(func(s *Status) { s.Active, s.PID = "inactive (dead)", 0 }), "stopped"},
		{with(func(s *Status) { s.Daemon = nil }), "unknown: the service runs (pid 7)"},
		{with(func(s *Status) {
			s.Heartbeat = heartbeat.Record{PID: 7, Time: now.Add(-heartbeat.StaleAfter - time.Second)}
		}), "stalled: the daemon made no progress for 1m31s"},
		{with(func(s *Status) { s.Heartbeat = heartbeat.Record{PID: 7, Time: now.Add(-heartbeat.StaleAfter)} }), "healthy"},
		{with(func(s *Status) { s.Heartbeat = heartbeat.Record{PID: 6, Time: now.Add(-time.Hour)} }), "healthy"}, // a previous daemon's record
		{with(func(s *Status) { s.Daemon.ReloadOK = false }), "degraded: the last config reload failed"},
		{with(func(s *Status) { s.Daemon.LastGitHubContact = time.Time{} }), "degraded: no successful GitHub contact yet"},
		{with(func(s *Status) { s.Daemon.LastGitHubContact = now.Add(-time.Hour) }), "degraded: no successful GitHub contact for 1h0m0s"},
		{with(func(*Status) {}), "healthy"},
		{with(func(s *Status) { s.SourceVersion = "1.2.4" }), "healthy; upgrade to 1.2.4 pending"},
		{with(func(s *Status) { s.SourceVersion, s.Guard.Rejected = "1.2.4", "1.2.4" }), "healthy; source version 1.2.4 was rolled back"},
		{Status{Installed: true, Active: "running", PID: 9, Daemon: func() *DaemonStatus { d := healthyDaemon(); return &d }()}, "healthy"},
	}
	for _, tt := range tests {
		if got := tt.s.Verdict(now); !strings.HasPrefix(got, tt.want) {
			t.Errorf("Verdict(%+v) = %q, want prefix %q", tt.s, got, tt.want)
		}
	}
}

func TestParseServiceManagerOutput(t *testing.T) {
	if st := parseSystemctlShow([]byte(showRunning)); !st.Loaded || st.Active != "active (running)" || st.PID != 4242 {
		t.Errorf("systemctl show: %+v", st)
	}
	if st := parseSystemctlShow([]byte("LoadState=not-found\nActiveState=inactive\nSubState=dead\nMainPID=0\n")); st.Loaded || st.PID != 0 {
		t.Errorf("systemctl show, not found: %+v", st)
	}
	print := "system/com.github.runner-manager = {\n\tactive count = 1\n\tstate = running\n\tpid = 812\n\tendpoints = {\n\t\tstate = idle\n\t}\n}\n"
	if st := parseLaunchctlPrint([]byte(print)); st.Active != "running" || st.PID != 812 {
		t.Errorf("launchctl print: %+v", st)
	}
}

func writeGuard(t *testing.T, stateDir string, st selfupdate.GuardState) {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, selfupdate.GuardStateFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestEveryHintIsRead: every system's row of the hints table goes through the same verdicts, and
// every command in each row shows in one of them (the Windows row once had its own verdicts, which
// left its restart, inspect and start unread). A hint is shown whole, never with a backquote of
// its own that would break the quoting around it.
func TestEveryHintIsRead(t *testing.T) {
	now := fixedNow()
	stale := heartbeat.Record{PID: 7, Time: now.Add(-time.Hour)}
	situations := []Status{
		{},
		{Installed: true, BinaryErr: "exec format error"},
		{Installed: true},
		{Installed: true, Active: "failed"},
		{Installed: true, Active: "stopped"},
		{Installed: true, Active: "running", PID: 7, Heartbeat: stale},
	}
	for _, row := range []Status{
		{System: Systemd},
		{System: Launchd},
		{System: Launchd, Agent: true},
		{System: Windows, Log: `C:\ProgramData\runner-manager\logs\runner-manager.log`},
	} {
		name := string(row.System)
		if row.Agent {
			name += " agent"
		}
		t.Run(name, func(t *testing.T) {
			var verdicts []string
			for _, sit := range situations {
				sit.System, sit.Agent, sit.Log = row.System, row.Agent, row.Log
				verdicts = append(verdicts, sit.Verdict(now))
			}
			all := strings.Join(verdicts, "\n")
			h := reflect.ValueOf(row.hints())
			for i := range h.NumField() {
				field, hint := h.Type().Field(i).Name, h.Field(i).String()
				if strings.Contains(hint, "`") {
					t.Errorf("hint %s = %q holds a backquote", field, hint)
				}
				if hint != "" && !strings.Contains(all, hint) {
					t.Errorf("hint %s = %q is in no verdict:\n%s", field, hint, all)
				}
			}
		})
	}
}
