//go:build e2e

package upgrade

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/selfupdate"
)

// host is the file layout of a service install (docs/upgrades.md), under a test's temp root.
type host struct {
	source  string // what the package manager replaces: /usr/bin/runner-manager
	private string // the copy the service runs: /var/lib/runner-manager/bin/runner-manager
}

// serviceHost installs bin as `service install` leaves a host (docs/upgrades.md): the private copy
// in state_dir/bin, the state directory made 0700 as systemd's StateDirectoryMode does, and the
// same binary at the source path.
func serviceHost(t testing.TB, bin string, cfg *harness.Config) host {
	t.Helper()
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return installAt(t, bin, filepath.Join(cfg.StateDir, "bin", "runner-manager"))
}

// handHost installs bin as an operator running `runner-manager daemon --upgrade-source` by hand
// might: the private copy outside a state directory that does not exist yet.
func handHost(t testing.TB, bin string) host {
	t.Helper()
	return installAt(t, bin, filepath.Join(t.TempDir(), "opt", "runner-manager", "runner-manager"))
}

func installAt(t testing.TB, bin, private string) host {
	t.Helper()
	h := host{source: filepath.Join(t.TempDir(), "usr", "bin", "runner-manager"), private: private}
	data := readFile(t, bin)
	for _, p := range []string{h.source, h.private} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h host) old() string { return h.private + selfupdate.OldSuffix }

// dropAtomically publishes bin at h.source the way dpkg and rpm do: the whole file is written and
// synced under a temporary name beside the target, then renamed over it.
func (h host) dropAtomically(t testing.TB, bin string) {
	t.Helper()
	tmp := h.source + ".dpkg-new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(readFile(t, bin)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, h.source); err != nil {
		t.Fatal(err)
	}
}

// writePartial overwrites h.source in place with the first half of bin and closes it: what a copy
// that was interrupted (or is still being flushed by a non-atomic `cp`) leaves. Executing it fails.
// While the watcher is running the current source with --version, Linux refuses to open it for
// writing (ETXTBSY), as it would refuse `cp`; the write is retried until the probe is over.
func (h host) writePartial(t testing.TB, bin string) {
	t.Helper()
	data := readFile(t, bin)
	var err error
	if !harness.Poll(eventTimeout, func() bool {
		err = os.WriteFile(h.source, data[:len(data)/2], 0o755)
		return !errors.Is(err, syscall.ETXTBSY)
	}) || err != nil {
		t.Fatal(err)
	}
}

// versionOf runs `path --version` and returns its output, or fails the test.
func versionOf(t testing.TB, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", path, err, out)
	}
	return strings.TrimSpace(string(out))
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
