package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/runner-manager/runner-manager/journal"
)

// TestStateDirIsMadePrivate: a state_dir an older install (or the operator) left at 0755 is 0700
// once the daemon holds it, so no other user, and no runner, can list or open what is in it.
func TestStateDirIsMadePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := lockStateDir(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("state_dir mode %04o after the daemon took it, want 0700", perm)
	}
}

// TestPolicyKeyIsPerHostAndStable: the fingerprint key is created once per journal and the same
// after a reopen (a restart must not make every idle runner look stale).
func TestPolicyKeyIsPerHostAndStable(t *testing.T) {
	keyOf := func(dir string) []byte {
		j, err := journal.Open(dir, journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		k, err := policyKey(t.Context(), j)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	dir := t.TempDir()
	first, again, other := keyOf(filepath.Join(dir, "a")), keyOf(filepath.Join(dir, "a")), keyOf(filepath.Join(dir, "b"))
	if len(first) != 32 || !bytes.Equal(first, again) || bytes.Equal(first, other) {
		t.Errorf("keys %x, %x (reopened), %x (another host): want 32 bytes, stable, per host", first, again, other)
	}
}
