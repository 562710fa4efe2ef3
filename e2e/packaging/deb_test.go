//go:build e2e && linux

// The .deb is installed into a Debian root by chroot and bind mounts: Linux only.

package packaging

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/status"
)

// TestDebInstallRunsAJobAndPurges installs the .deb into a clean Debian root (mmdebstrap, /proc
// mounted), checks what postinst's `service install` wrote, starts the daemon with the unit's
// ExecStart by hand (no systemd there) against the simulator, runs a job, removes the package
// (prerm's `service uninstall --refuse-busy`), purges it, and checks the root is file for file as
// before the install, apart from dpkg's own records.
func TestDebInstallRunsAJobAndPurges(t *testing.T) {
	deb := artifact(t, packages(t), "runner-manager_*_amd64.deb")
	root := debianRoot(t)
	before := tree(t, root)

	run(t, "cp", deb, filepath.Join(root, "tmp", "runner-manager.deb"))
	out := run(t, "chroot", root, "dpkg", "-i", "/tmp/runner-manager.deb")
	if !strings.Contains(out, "the service is installed, not started") {
		t.Errorf("dpkg -i did not print postinst's next steps:\n%s", out)
	}
	for _, f := range []string{"/usr/bin/runner-manager", "/var/lib/runner-manager/bin/runner-manager",
		"/var/lib/runner-manager/service.json", "/etc/systemd/system/runner-manager.service", "/etc/runner-manager/config.toml",
		"/usr/share/man/man1/runner-manager-service-install.1.gz", "/usr/share/bash-completion/completions/runner-manager"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("after dpkg -i: %v", err)
		}
	}
	if out := run(t, "chroot", root, "runner-manager", "validate", "--offline"); !strings.Contains(out, "valid") {
		t.Errorf("the starter config does not validate in the root:\n%s", out)
	}

	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/api"}})
	cfg := harness.NewConfig(t, sim)
	cfg.File.Daemon.StateDir = "/var/lib/runner-manager"
	cfg.File.GitHub.TokenFile = "/etc/runner-manager/token"
	cfg.Add(harness.RepoTarget("api", "acme/api", []string{"linux"}, 1))
	token, err := os.ReadFile(sim.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/runner-manager/token"), token, 0o600); err != nil {
		t.Fatal(err)
	}
	harness.WriteConfig(t, filepath.Join(root, "etc/runner-manager/config.toml"), cfg.Render(t))

	daemon := startUnit(t, root)
	socket := status.SocketPath(filepath.Join(root, "var/lib/runner-manager"))
	harness.Eventually(t, time.Minute, "the packaged daemon answers on its status socket", func() bool {
		_, err := status.Fetch(context.Background(), socket)
		return err == nil
	})
	job := sim.MustQueue(t, "acme/api", []string{"linux"}, 2*time.Second)
	sim.WaitJobsDone(t, 3*time.Minute, job)
	harness.Eventually(t, time.Minute, "no runner busy after the job", func() bool {
		snap, err := status.Fetch(context.Background(), socket)
		return err == nil && len(snap.Targets) == 1 && snap.Targets[0].Busy == 0
	})

	// Removal with the daemon up: nothing is busy, so prerm uninstalls (the drain is the daemon's
	// stop; no systemd here, so the test sends the unit's KillSignal).
	out = run(t, "chroot", root, "dpkg", "--remove", "runner-manager")
	if _, err := os.Stat(filepath.Join(root, "etc/systemd/system/runner-manager.service")); err == nil {
		t.Errorf("dpkg --remove left the unit:\n%s", out)
	}
	stopUnit(t, daemon)
	for _, kept := range []string{"/etc/runner-manager/config.toml", "/var/lib/runner-manager"} {
		if _, err := os.Stat(filepath.Join(root, kept)); err != nil {
			t.Errorf("dpkg --remove removed %s (config and state stay until a purge): %v", kept, err)
		}
	}
	// A runner user the daemon made (per-slot users are made by useradd with this comment; the
	// test makes one itself, since a daemon in a chroot shares the host's uids and processes).
	run(t, "chroot", root, "useradd", "--system", "--user-group", "--create-home", "--home-dir", "/home/runner-manager-r0",
		"--comment", "runner-manager runner slot 0", "runner-manager-r0")
	run(t, "chroot", root, "dpkg", "--purge", "runner-manager")

	after := tree(t, root)
	if added, removed := diff(before, after); len(added)+len(removed) > 0 {
		t.Errorf("the purge did not leave the root as it found it:\nadded:   %v\nremoved: %v", added, removed)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil || strings.Contains(string(passwd), "runner-manager") {
		t.Errorf("the purge left a runner user (%v):\n%s", err, passwd)
	}
}

// debianRoot unpacks a fresh copy of the cached Debian root (made by `make` on first use) into a
// short temp path (the status socket's path is limited to ~104 bytes) and mounts /proc in it.
func debianRoot(t *testing.T) string {
	t.Helper()
	repo, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(repo, "bin", "debroot-bookworm.tar")
	if out, err := exec.Command("make", "-C", repo, "bin/debroot-bookworm.tar").CombinedOutput(); err != nil {
		t.Fatalf("make the Debian root with mmdebstrap: %v\n%s", err, out)
	}
	root, err := os.MkdirTemp("", "rmdeb")
	if err != nil {
		t.Fatal(err)
	}
	proc := filepath.Join(root, "proc")
	t.Cleanup(func() {
		_ = syscall.Unmount(proc, syscall.MNT_DETACH)
		// Only when /proc is gone: RemoveAll must never walk into the host's /proc.
		if m, err := os.ReadFile("/proc/self/mounts"); err == nil && !strings.Contains(string(m), " "+proc+" ") {
			_ = os.RemoveAll(root)
		}
	})
	run(t, "tar", "-C", root, "-xf", tarball)
	if err := syscall.Mount("proc", proc, "proc", 0, ""); err != nil {
		t.Fatalf("mount /proc in the Debian root: %v", err)
	}
	return root
}

// startUnit runs the installed unit's ExecStart inside root and returns the process.
func startUnit(t *testing.T, root string) *exec.Cmd {
	t.Helper()
	unit, err := os.ReadFile(filepath.Join(root, "etc/systemd/system/runner-manager.service"))
	if err != nil {
		t.Fatal(err)
	}
	var argv []string
	for _, line := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			argv = strings.Fields(v)
		}
	}
	want := []string{"/var/lib/runner-manager/bin/runner-manager", "daemon", "--config", "/etc/runner-manager/config.toml", "--upgrade-source", "/usr/bin/runner-manager"}
	if !slices.Equal(argv, want) {
		t.Fatalf("the unit's ExecStart is %q, want %q", argv, want)
	}
	logs, err := os.Create(filepath.Join(t.TempDir(), "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("chroot", append([]string{root}, argv...)...)
	cmd.Env = append(harness.CleanEnviron(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		harness.KillRunnerProcesses(filepath.Join(root, "var/lib/runner-manager"))
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("daemon log:\n%s", b)
		}
	})
	return cmd
}

// stopWithin bounds a stop: the harness config's 10 s drain, the 2 s the daemon takes beyond it, and slack.
const stopWithin = 30 * time.Second

// stopUnit sends the unit's KillSignal (SIGTERM) and waits for the drain to end the daemon.
func stopUnit(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the daemon's stop: %v", err)
		}
	case <-time.After(stopWithin):
		t.Fatal("the daemon did not stop within its drain")
	}
}

// tree lists every path under root except what dpkg and the test itself change: dpkg's database
// and log, /proc, /tmp, and the backups useradd/userdel keep of the account files.
func tree(t *testing.T, root string) map[string]bool {
	t.Helper()
	skip := []string{"/proc", "/tmp", "/var/lib/dpkg", "/var/log", "/var/cache/debconf"}
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := "/" + strings.TrimPrefix(strings.TrimPrefix(path, root), "/")
		for _, s := range skip {
			if rel == s && d.IsDir() {
				return fs.SkipDir
			}
		}
		if strings.HasSuffix(rel, "-") && strings.HasPrefix(rel, "/etc/") { // /etc/passwd- and the like
			return nil
		}
		out[rel] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diff(before, after map[string]bool) (added, removed []string) {
	for p := range after {
		if !before[p] {
			added = append(added, p)
		}
	}
	for p := range before {
		if !after[p] {
			removed = append(removed, p)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}
