package service

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/selfupdate"
)

func fixedNow() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func TestInstallSystemd(t *testing.T) {
	m, fm, src := testHost(t, Systemd, "v1.2.3")
	root := m.Paths.Root
	bin := filepath.Join(root, m.Paths.Binary())
	// Leftovers of an earlier life: a .old and a guard record that rejected a version.
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{bin + selfupdate.OldSuffix, filepath.Join(root, m.Paths.StateDir, selfupdate.GuardStateFile)} {
		if err := os.WriteFile(f, []byte("leftover"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := m.Install(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != "1.2.3" || rec.Source != src || rec.Binary != "/var/lib/runner-manager/bin/runner-manager" {
		t.Fatalf("record = %+v", rec)
	}
	if v, err := selfupdate.ProbeVersion(t.Context(), nil, bin, 5*time.Second); err != nil || v != "1.2.3" {
		t.Fatalf("private copy: %q, %v", v, err)
	}
	for _, gone := range []string{bin + selfupdate.OldSuffix, filepath.Join(root, m.Paths.StateDir, selfupdate.GuardStateFile)} {
		if exists(t, gone) {
			t.Errorf("%s survived the install", gone)
		}
	}
	onDisk, ok, err := ReadRecord(filepath.Join(root, m.Paths.StateDir))
	if err != nil || !ok || !reflect.DeepEqual(onDisk, rec) {
		t.Fatalf("record on disk = %+v, %v, %v; want %+v", onDisk, ok, err, rec)
	}
	unit, err := os.ReadFile(filepath.Join(root, "/etc/systemd/system/runner-manager.service"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := SystemdUnit(defaultSpec(Systemd))
	if string(unit) != want {
		t.Errorf("installed unit is not the generated one:\n%s", unit)
	}
	if got := fm.got(); !slices.Equal(got, []string{"systemctl daemon-reload", "systemctl enable runner-manager.service"}) {
		t.Errorf("service manager calls = %q", got)
	}
	if fi, err := os.Stat(filepath.Join(root, m.Paths.StateDir)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode = %v, %v; want 0700", fi.Mode(), err)
	}
}

func TestInstallRefusesABrokenSource(t *testing.T) {
	m, fm, src := testHost(t, Systemd, "fail")
	if _, err := m.Install(t.Context(), src); err == nil || !strings.Contains(err.Error(), "does not run") {
		t.Fatalf("Install = %v, want a refusal", err)
	}
	if exists(t, filepath.Join(m.Paths.Root, m.Paths.UnitFile(Systemd))) || len(fm.got()) > 0 {
		t.Fatal("a refused install wrote a unit or called systemctl")
	}
	if _, err := m.Install(t.Context(), m.Paths.Binary()); err == nil {
		t.Fatal("installing from the private copy itself was accepted")
	}
}

func TestInstallReportsSystemctlFailure(t *testing.T) {
	m, fm, src := testHost(t, Systemd, "v1.2.3")
	fm.fail["systemctl daemon-reload"] = errors.New("exit status 1: System has not been booted with systemd")
	_, err := m.Install(t.Context(), src)
	if err == nil || !strings.Contains(err.Error(), "is written but `systemctl daemon-reload` failed") {
		t.Fatalf("Install = %v", err)
	}
}

func TestInstallLaunchd(t *testing.T) {
	m, fm, src := testHost(t, Launchd, "v1.2.3")
	if _, err := m.Install(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	if !exists(t, filepath.Join(m.Paths.Root, "/Library/LaunchDaemons/com.github.runner-manager.plist")) {
		t.Fatal("plist not written")
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{"launchctl enable system/com.github.runner-manager",
		"launchctl bootstrap system /Library/LaunchDaemons/com.github.runner-manager.plist",
		"launchctl bootout system/com.github.runner-manager"}
	if got := fm.got(); !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
}

func TestStartStopUninstallSystemd(t *testing.T) {
	m, fm, src := testHost(t, Systemd, "v1.2.3")
	if _, err := m.Install(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	fm.calls = nil
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	fm.fail["systemctl stop runner-manager.service"] = errors.New("exit status 5")
	if err := m.Stop(t.Context()); err == nil || !strings.Contains(err.Error(), "service stop: `systemctl stop runner-manager.service` failed") {
		t.Fatalf("Stop = %v", err)
	}
	if _, err := m.Uninstall(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{"systemctl start runner-manager.service", "systemctl stop runner-manager.service",
		"systemctl disable --now runner-manager.service", "systemctl daemon-reload"}
	if got := fm.got(); !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
	root := m.Paths.Root
	for _, gone := range []string{m.Paths.UnitFile(Systemd), m.Paths.Binary(), filepath.Join(m.Paths.StateDir, RecordFile)} {
		if exists(t, filepath.Join(root, gone)) {
			t.Errorf("%s survived uninstall", gone)
		}
	}
	if !exists(t, filepath.Join(root, m.Paths.StateDir)) {
		t.Error("uninstall removed the state directory; runners left behind could not be adopted")
	}
	if _, err := m.Uninstall(t.Context()); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("second Uninstall = %v", err)
	}
}

func TestInstallWithoutPermissionSaysSudo(t *testing.T) {
	m, fm, src := testHost(t, Systemd, "v1.2.3")
	// Tests run as root, which file modes do not stop; a denied service-manager call stands in.
	fm.fail["systemctl daemon-reload"] = &fs.PathError{Op: "connect", Path: "/run/systemd/private", Err: fs.ErrPermission}
	_, err := m.Install(t.Context(), src)
	if err == nil || !strings.Contains(err.Error(), "needs root: use sudo") {
		t.Fatalf("Install = %v, want the sudo hint", err)
	}
}
