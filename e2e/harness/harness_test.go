package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

// fakeConfig is what NewConfig builds, without a simulator: a token file and an unused API URL.
func fakeConfig(t *testing.T) *Config {
	t.Helper()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("ghp_x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Config{Dir: t.TempDir()}
	c.Path = filepath.Join(c.Dir, "config.toml")
	c.StateDir = filepath.Join(t.TempDir(), "state")
	c.File.Daemon = config.Daemon{StateDir: c.StateDir, LogLevel: "info", LogFormat: "json", MaxRunners: 3,
		PollInterval: config.Duration(time.Second), ShutdownDrainTimeout: config.Duration(5 * time.Second), ReloadSettle: config.Duration(time.Second), StatusListen: "unix"}
	c.File.GitHub = config.GitHub{APIURL: "http://127.0.0.1:1", TokenFile: tok}
	return c
}

func TestRenderedConfigLoads(t *testing.T) {
	c := fakeConfig(t)
	c.Add(RepoTarget("web", "acme/web", []string{"e2e"}, 2), OrgTarget("org", "acme", []string{"big"}, 1))
	c.Target(t, "web").MinIdle = 1
	c.Remove("org")
	got, err := config.LoadBytes(c.Path, c.Render(t), config.Options{Environ: func() []string { return nil }})
	if err != nil {
		t.Fatalf("the rendered config does not load: %v\n%s", err, c.Render(t))
	}
	if len(got.Targets) != 1 || got.Targets[0].Name != "web" || got.Targets[0].MinIdle != 1 ||
		got.Targets[0].IdleTimeout.D() != 3*time.Second || got.Daemon.PollInterval.D() != time.Second {
		t.Fatalf("loaded %+v from:\n%s", got, c.Render(t))
	}
}

// identity is what os.SameFile compares (the inode; Windows' file ID).
func identity(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

func TestWritersReplaceTheWayOperatorsDo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	WriteConfig(t, path, []byte("a"))
	first := identity(t, path)
	WriteConfig(t, path, []byte("b"))
	if !os.SameFile(identity(t, path), first) {
		t.Fatal("WriteConfig must rewrite the same inode")
	}
	WriteConfigViaRename(t, path, []byte("c"))
	if os.SameFile(identity(t, path), first) {
		t.Fatal("WriteConfigViaRename must replace the inode")
	}
	if data, _ := os.ReadFile(path); string(data) != "c" {
		t.Fatalf("content %q, want c", data)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestSwapConfigMapStyle(t *testing.T) {
	dir := t.TempDir()
	path := SwapConfigMapStyle(t, dir, []byte("one"))
	firstTarget, _ := os.Readlink(filepath.Join(dir, "..data"))
	SwapConfigMapStyle(t, dir, []byte("two"))
	if link, err := os.Readlink(path); err != nil || link != filepath.Join("..data", "config.toml") {
		t.Fatalf("config.toml must link to ..data/config.toml, got %q (%v)", link, err)
	}
	if data, _ := os.ReadFile(path); string(data) != "two" {
		t.Fatalf("content %q, want two", data)
	}
	if _, err := os.Stat(filepath.Join(dir, firstTarget)); !os.IsNotExist(err) {
		t.Fatalf("the previous version %s must be removed, stat: %v", firstTarget, err)
	}
}

func TestParseLogAndMarks(t *testing.T) {
	lines := ParseLog(`{"time":"2026-12-02T14:09:55Z","level":"INFO","msg":"target loop started for repo:acme/a","kind":"loop","target":"a"}
panic: boom

{"level":"WARN","msg":"x","kind":"reload-failed"}
`)
	if len(lines) != 3 || lines[0].Target != "a" || lines[0].Kind != "loop" || lines[1].Raw != "panic: boom" || lines[1].Kind != "" {
		t.Fatalf("parsed %+v", lines)
	}
	if got := Records(lines, Both(OfKind("loop"), OfTarget("a"))); len(got) != 1 {
		t.Fatalf("Records = %+v", got)
	}
}

func TestLiveAttemptsAndKill(t *testing.T) {
	state := t.TempDir()
	// A stand-in for a runner: its command line names <runtime root>/att-1, as the shim's does.
	cmd := exec.Command("sh", "-c", "sleep 30", filepath.Join(runtimeRoot(state), "att-1", "runner", "run.sh"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	live, err := LiveAttempts(state)
	if err != nil || len(live) != 1 || !live["att-1"] {
		t.Fatalf("LiveAttempts = %v, %v; want att-1", live, err)
	}
	if other, _ := LiveAttempts(t.TempDir()); len(other) != 0 {
		t.Fatalf("another state dir sees %v", other)
	}
	KillRunnerProcesses(state)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("KillRunnerProcesses did not kill the process")
	}
	if AttemptOf("runner-manager-abc-01") != "abc-01" {
		t.Fatal("AttemptOf must strip the runner name prefix")
	}
}
