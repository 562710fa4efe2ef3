//go:build e2e && linux

package windows

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/daemonproc"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/status"
)

// wineTimeout bounds each wait on the daemon under wine: a cold wine start alone takes seconds on
// a loaded host, and every runner start is two more Windows processes (shim, cmd /c run.cmd).
const wineTimeout = 3 * time.Minute

// TestDaemonRunsOneJobUnderWine: runner-manager.exe daemon, under wine, with the simulator
// (native, 127.0.0.1) serving the fake runner built for Windows as actions-runner-win-x64-*.zip,
// runs one queued job to completion: it downloads the zip, the Windows runner registers through
// run.cmd and runs the job, the runner ends and the daemon sees it end (exited, deregistered,
// cleaned), status and reload reach it over loopback TCP with its token, then it stops on Ctrl-C
// (SIGINT is how wine delivers CTRL_C_EVENT) with exit 0.
// Runners run as the daemon's account (runner_user = "daemon"), as on every Windows host.
func TestDaemonRunsOneJobUnderWine(t *testing.T) {
	w := newWine(t)
	exe := BuildExe(t)
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/win"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	winPkg, err := ghsim.BuildFakeRunnerPackageFor(ctx, t.TempDir(), "windows", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	sim.ServeRunnerPackage(winPkg) // beside the Linux package, as GitHub lists every platform

	cfg := harness.NewConfig(t, sim)
	cfg.Add(harness.RepoTarget("win", "acme/win", []string{"windows"}, 1))
	cfg.File.Daemon.StateDir = WinPath(cfg.StateDir) // wine maps Linux paths to drive Z:
	cfg.File.GitHub.TokenFile = WinPath(sim.TokenFile)
	cfg.Write(t)

	d := startWineDaemon(t, w, exe, WinPath(cfg.Path))
	job := sim.MustQueue(t, "acme/win", []string{"windows"}, 2*time.Second)
	if !harness.Poll(wineTimeout, func() bool { return sim.JobsDone(job) }) {
		t.Fatalf("the job did not complete within %s under wine: %+v", wineTimeout, sim.MustJob(t, job))
	}
	j := sim.MustJob(t, job)
	if j.Conclusion != "success" || !strings.HasPrefix(j.RunnerName, harness.RunnerPrefix) {
		t.Fatalf("job = %+v; want success on a runner-manager runner", j)
	}
	regs := sim.RegistrationsOf("acme/win")
	if len(regs) == 0 {
		t.Fatal("the simulator saw no JIT registration")
	}
	attempt := harness.AttemptOf(j.RunnerName)
	// The daemon sees the runner end: the shim's exit status read, the registration concluded, the
	// runtime directory removed, each an event of this attempt in the daemon's log.
	for _, kind := range []string{"exited", "deregistered", "cleaned"} {
		if !harness.Poll(wineTimeout, func() bool { return d.hasEvent(attempt, kind) }) {
			t.Fatalf("the daemon logged no %q event for attempt %s within %s:\n%s", kind, attempt, wineTimeout, d.log())
		}
	}
	if rs := sim.ManagedRunners(); len(rs) != 0 {
		t.Fatalf("registrations left after the runner ended: %+v", rs)
	}
	if entries, _ := os.ReadDir(filepath.Join(cfg.StateDir, "runners")); len(entries) != 0 {
		t.Fatalf("runtime directories left after the runner ended: %v", entries)
	}
	// The CLI reaches the daemon over the status API, loopback TCP behind the token in the state
	// directory's status.endpoint on Windows: status names the target and the event it saw, and
	// reload (SIGHUP's stand-in there) finds the file unchanged.
	stdout, stderr, code := w.Run(t, cfg.Dir, exe, "status", "--json", "--config", WinPath(cfg.Path))
	var snap status.Snapshot
	if err := json.Unmarshal([]byte(stdout), &snap); code != 0 || err != nil {
		t.Fatalf("runner-manager.exe status --json under wine: exit %d, %v; stderr:\n%s", code, err, stderr)
	}
	if len(snap.Targets) != 1 || snap.Targets[0].Name != "win" || !slices.ContainsFunc(snap.Events, func(e status.Event) bool { return e.Attempt == attempt && e.Kind == "cleaned" }) {
		t.Fatalf("status under wine = targets %+v, events %+v; want target win and attempt %s cleaned", snap.Targets, snap.Events, attempt)
	}
	stdout, stderr, code = w.Run(t, cfg.Dir, exe, "reload", "--config", WinPath(cfg.Path))
	if code != 0 || !strings.Contains(stdout, "no change") {
		t.Fatalf("runner-manager.exe reload under wine: exit %d, %q (stderr %q); want exit 0 and no change", code, stdout, stderr)
	}
	if err := d.proc.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code, err = d.proc.Wait(ctx, wineTimeout)
	if err != nil || code != 0 {
		t.Fatalf("the daemon under wine after Ctrl-C: exit %d (%v), %v; want 0:\n%s", code, d.proc.Err(), err, d.log())
	}
}

// wineDaemon is runner-manager.exe daemon running under wine.
type wineDaemon struct {
	proc   *daemonproc.Daemon
	stderr string // the daemon's JSON log
}

// startWineDaemon runs exe daemon --config cfg under wine through a two-line script (daemonproc
// runs a binary with `daemon --config` as its first arguments) and waits for the ready line.
func startWineDaemon(t *testing.T, w *Wine, exe, cfg string) *wineDaemon {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "runner-manager-under-wine")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec wine "+exe+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := &wineDaemon{stderr: filepath.Join(dir, "daemon.stderr")}
	stdout, err := os.Create(filepath.Join(dir, "daemon.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(d.stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdout.Close(); stderr.Close() })
	d.proc, err = daemonproc.StartDaemon(context.Background(), daemonproc.DaemonSpec{
		Bin: script, Config: cfg, Env: w.Env, Stdout: stdout, Stderr: stderr,
	}, wineTimeout)
	if err != nil {
		t.Fatalf("start runner-manager.exe daemon under wine: %v\n%s", err, d.log())
	}
	t.Cleanup(func() {
		if !d.proc.Exited() {
			d.proc.Kill()
		}
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.log())
		}
	})
	return d
}

func (d *wineDaemon) log() string {
	data, _ := os.ReadFile(d.stderr)
	return crlf(string(data))
}

// hasEvent reports whether the daemon logged an engine event of kind for attempt.
func (d *wineDaemon) hasEvent(attempt, kind string) bool {
	return slices.ContainsFunc(harness.ParseLog(d.log()), func(l harness.LogLine) bool {
		return l.Attempt == attempt && l.Kind == kind
	})
}
