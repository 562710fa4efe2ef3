package doctor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/runner/runnerusertest"
	"github.com/runner-manager/runner-manager/internal/service"
)

func TestMain(m *testing.M) {
	runnerusertest.SweepInMain()
	code := m.Run()
	runnerusertest.SweepInMain()
	os.Exit(code)
}

var testNow = time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)

// treeEnv is an Env over a fresh tree (--root) whose config is cfg (nil: the defaults).
func treeEnv(t *testing.T, cfg *config.Config) *Env {
	t.Helper()
	root := t.TempDir()
	return &Env{Root: root, ConfigPath: "/etc/runner-manager/config.toml", Config: cfg, EUID: os.Geteuid(),
		Now: func() time.Time { return testNow }, Users: PasswdFile(filepath.Join(root, "etc", "passwd")),
		Paths: service.DefaultPaths(service.Systemd)}
}

// mkdir makes host path p in e's tree with mode.
func mkdir(t *testing.T, e *Env, p string, mode os.FileMode) string {
	t.Helper()
	d := e.onDisk(p)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, mode); err != nil {
		t.Fatal(err)
	}
	return d
}

// write makes host file p in e's tree with mode.
func write(t *testing.T, e *Env, p, content string, mode os.FileMode) string {
	t.Helper()
	d := e.onDisk(p)
	if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, mode); err != nil {
		t.Fatal(err)
	}
	return d
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// only keeps the findings of check.
func only(fs []Finding, check string) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out
}
