package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/service"
)

func TestCheckUnit(t *testing.T) {
	unit := "/etc/systemd/system/runner-manager.service"
	wants := "/etc/systemd/system/multi-user.target.wants/runner-manager.service"
	tests := []struct {
		name          string
		unit, enabled bool
		status        Status
		detail        string
	}{
		{"not installed", false, false, Warn, "not installed"},
		{"installed, not enabled", true, false, Warn, "not enabled"},
		{"installed and enabled", true, true, OK, "installed and enabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := treeEnv(t, nil)
			if tt.unit {
				write(t, e, unit, "[Unit]\n", 0o644)
			}
			if tt.enabled {
				mkdir(t, e, filepath.Dir(wants), 0o755)
				if err := os.Symlink(unit, e.onDisk(wants)); err != nil { // dangling in the tree, as systemctl leaves it
					t.Fatal(err)
				}
			}
			f := checkUnit(t.Context(), e)[0]
			if f.Status != tt.status || !strings.Contains(f.Detail, tt.detail) {
				t.Errorf("got %+v, want %s %q", f, tt.status, tt.detail)
			}
		})
	}
}

// TestCheckService turns service status's verdict into a finding.
func TestCheckService(t *testing.T) {
	now := testNow
	running := service.Status{Installed: true, Active: "active (running)", PID: 42,
		Daemon: &service.DaemonStatus{ReloadOK: true, LastGitHubContact: now.Add(-time.Minute)}}
	failed := service.Status{Installed: true, Active: "failed"}
	stopped := service.Status{Installed: true, Active: "inactive (dead)"}
	tests := []struct {
		name   string
		st     service.Status
		status Status
	}{
		{"healthy", running, OK},
		{"failed", failed, Fail},
		{"stopped", stopped, Warn},
		{"not installed", service.Status{}, Skip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Env{Now: func() time.Time { return now }, Service: func(context.Context) service.Status { return tt.st }}
			f := checkService(t.Context(), e)[0]
			if f.Status != tt.status || f.Status != OK && f.Status != Skip && f.Do == "" {
				t.Errorf("got %+v, want %s", f, tt.status)
			}
		})
	}
}

// TestCheckUpgradeSource applies selfupdate's StrictModes rule to the source the install watches.
func TestCheckUpgradeSource(t *testing.T) {
	src := "/usr/local/bin/runner-manager"
	tests := []struct {
		name    string
		record  string // "": none
		srcMode os.FileMode
		dirMode os.FileMode
		status  Status
	}{
		{name: "no install", status: Skip},
		{name: "root's", record: `{"source":"` + src + `"}`, srcMode: 0o755, dirMode: 0o755, status: OK},
		{name: "group-writable file", record: `{"source":"` + src + `"}`, srcMode: 0o775, dirMode: 0o755, status: Fail},
		{name: "world-writable directory", record: `{"source":"` + src + `"}`, srcMode: 0o755, dirMode: 0o777, status: Fail},
		{name: "damaged record", record: `{`, status: Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := treeEnv(t, nil)
			if tt.record != "" {
				write(t, e, "/var/lib/runner-manager/service.json", tt.record, 0o644)
			}
			if tt.srcMode != 0 {
				write(t, e, src, "#!/bin/sh\n", tt.srcMode)
				mkdir(t, e, filepath.Dir(src), tt.dirMode)
			}
			f := checkUpgradeSource(t.Context(), e)[0]
			if f.Status != tt.status {
				t.Fatalf("got %+v, want %s", f, tt.status)
			}
			if strings.Contains(f.Detail, e.Root) {
				t.Errorf("detail names the tree: %q", f.Detail)
			}
		})
	}
}
