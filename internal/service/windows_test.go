package service

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/golden"
)

// fakeSCM is the Windows service control manager as a record of calls; exists and state answer
// Query. At Install it notes whether the private copy and the install record were already there.
type fakeSCM struct {
	t       *testing.T
	root    string // the test host's Root, stripped from paths in calls
	calls   []string
	exists  bool
	state   string
	pid     int
	spec    WindowsService
	ready   bool // the private copy and the record existed when Install was called
	failOn  string
	notes   []string // Install's
	manager *Manager
}

func (f *fakeSCM) call(format string, args ...any) error {
	c := strings.ReplaceAll(fmt.Sprintf(format, args...), f.root, "")
	f.calls = append(f.calls, c)
	if f.failOn != "" && strings.HasPrefix(c, f.failOn) {
		return fmt.Errorf("%s: Access is denied.", f.failOn)
	}
	return nil
}

func (f *fakeSCM) Install(s WindowsService) ([]string, error) {
	p := f.manager.Paths
	f.ready = exists(f.t, filepath.Join(f.root, p.Binary())) && exists(f.t, filepath.Join(f.root, p.StateDir, RecordFile))
	f.spec, f.exists, f.state = s, true, "stopped"
	return f.notes, f.call("install %s as %s", s.Name, s.Account)
}
func (f *fakeSCM) Remove(_ context.Context, name string, timeout time.Duration) error {
	f.exists = false
	return f.call("remove %s (stop within %s)", name, timeout)
}
func (f *fakeSCM) Start(name string) error { f.state = "running"; return f.call("start %s", name) }
func (f *fakeSCM) Stop(_ context.Context, name string, timeout time.Duration) error {
	f.state = "stopped"
	return f.call("stop %s within %s", name, timeout)
}
func (f *fakeSCM) Query(string) (string, int, error) {
	if !f.exists {
		return "", 0, ErrServiceMissing
	}
	return f.state, f.pid, nil
}
func (f *fakeSCM) SecureDir(dir, account string) error {
	return f.call("secure %s for %q", dir, account)
}

// windowsHost is testHost for a Windows install under %ProgramData%\runner-manager (here
// /ProgramData/runner-manager in the temp root), with a fake SCM.
func windowsHost(t *testing.T) (*Manager, *fakeSCM, *fakeManager, string) {
	t.Helper()
	m, fm, src := testHost(t, Windows, "v1.2.3")
	root := m.Paths.Root
	m.Paths = WindowsPaths("/ProgramData/runner-manager")
	m.Paths.Root = root
	scm := &fakeSCM{t: t, root: root, manager: m}
	m.SCM = scm
	return m, scm, fm, src
}

// TestInstallWindows: install copies the binary and writes the record first, then registers the
// service (automatic start, restart on every failure, the daemon's command line from the private
// copy), then restricts the state directory to the account it runs as; no systemctl is run.
func TestInstallWindows(t *testing.T) {
	for _, tc := range []struct {
		account, wantAccount, wantSecure string
	}{
		{"", "LocalSystem", `secure /ProgramData/runner-manager for ""`},
		{`NT SERVICE\runner-manager`, `NT SERVICE\runner-manager`, `secure /ProgramData/runner-manager for "NT SERVICE\\runner-manager"`},
	} {
		m, scm, fm, src := windowsHost(t)
		m.Account = tc.account
		rec, err := m.Install(t.Context(), src)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Unit != WindowsServiceName || rec.Binary != "/ProgramData/runner-manager/bin/runner-manager.exe" || rec.Version != "1.2.3" {
			t.Errorf("record = %+v", rec)
		}
		want := []string{"install runner-manager as " + tc.wantAccount, tc.wantSecure}
		if !slices.Equal(scm.calls, want) || len(fm.got()) > 0 {
			t.Errorf("SCM calls %q (service manager %q), want %q and none", scm.calls, fm.got(), want)
		}
		if !scm.ready {
			t.Error("the service was registered before the private copy and the install record were in place")
		}
		s := scm.spec
		wantArgs := []string{"daemon", "--windows-service", "--config", "/ProgramData/runner-manager/config.toml", "--upgrade-source", src}
		if s.Binary != rec.Binary || !slices.Equal(s.Args, wantArgs) || s.RestartDelay != 5*time.Second || s.StopTimeout != 90*time.Second {
			t.Errorf("registered %+v; want %s %q, restart after 5s, stop within 90s", s, rec.Binary, wantArgs)
		}
		if !exists(t, filepath.Join(m.Paths.Root, "/ProgramData/runner-manager/logs")) {
			t.Error("no log directory")
		}
	}
}

// TestWindowsLifecycle: start, stop, status and uninstall go to the SCM; uninstall stops (with the
// drain's bound) and deletes the service before removing the binary, and keeps the state directory.
func TestWindowsLifecycle(t *testing.T) {
	m, scm, _, src := windowsHost(t)
	now := fixedNow()
	if st := m.Status(t.Context(), nil); st.Installed || !strings.HasPrefix(st.Verdict(now), "not installed: run `runner-manager service install` as an Administrator") {
		t.Errorf("status before install: %+v, %s", st, st.Verdict(now))
	}
	if _, err := m.Uninstall(t.Context()); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("Uninstall before install = %v", err)
	}
	if _, err := m.Install(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	scm.calls = nil
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	scm.pid = 4242
	st := m.Status(t.Context(), nil)
	if !st.Installed || st.Active != "running" || st.PID != 4242 || !st.Running() || st.BinaryVersion != "1.2.3" {
		t.Errorf("status of the running service: %+v", st)
	}
	if v := st.Verdict(now); !strings.HasPrefix(v, "unknown: the service runs (pid 4242)") {
		t.Errorf("verdict %q", v)
	}
	if err := m.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v := m.Status(t.Context(), nil).Verdict(now); !strings.HasPrefix(v, "stopped: start it with `runner-manager service start` as an Administrator") {
		t.Errorf("verdict of the stopped service %q", v)
	}
	if _, err := m.Uninstall(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{"start runner-manager", "stop runner-manager within 1m30s", "remove runner-manager (stop within 1m30s)"}
	if !slices.Equal(scm.calls, want) {
		t.Errorf("SCM calls %q, want %q", scm.calls, want)
	}
	root := m.Paths.Root
	for _, gone := range []string{m.Paths.Binary(), filepath.Join(m.Paths.StateDir, RecordFile)} {
		if exists(t, filepath.Join(root, gone)) {
			t.Errorf("%s survived uninstall", gone)
		}
	}
	if !exists(t, filepath.Join(root, m.Paths.StateDir)) {
		t.Error("uninstall removed the state directory; runners left behind could not be adopted")
	}
}

// TestInstallWindowsReportsTheSCM: a refused registration says so, what the SCM could not set up
// (wine's has no restart on a non-zero exit) reaches the operator, and under --root (an image
// tree, no SCM of this host) nothing is registered.
func TestInstallWindowsReportsTheSCM(t *testing.T) {
	m, scm, _, src := windowsHost(t)
	scm.failOn = "install"
	if _, err := m.Install(t.Context(), src); err == nil || !strings.Contains(err.Error(), "the private copy is in place but registering the service: install: Access is denied.") {
		t.Errorf("Install with the SCM refusing = %v", err)
	}
	scm.failOn, scm.notes = "", []string{"this service control manager cannot restart a service that exits non-zero"}
	if rec, err := m.Install(t.Context(), src); err != nil || !slices.Equal(rec.Notes, scm.notes) {
		t.Errorf("Install with a note from the SCM = %+v, %v; want the note passed on", rec, err)
	}
	m.SCM = nil
	if _, err := m.Install(t.Context(), src); err != nil {
		t.Errorf("Install under a root without the SCM: %v", err)
	}
}

func TestWindowsDescription(t *testing.T) {
	m, _, _, _ := windowsHost(t)
	m.Drain = 2 * time.Minute
	got, err := m.Render(`C:\Program Files\runner-manager\runner-manager.exe`)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/windows-service.txt", []byte(got), *update)
}
