package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		golden(t, filepath.Join("testdata", "service", s.golden), strings.ReplaceAll(out+errOut, root, "$ROOT"))
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
