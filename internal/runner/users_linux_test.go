//go:build linux

package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/runner-manager/runner-manager/internal/livetest"
	"github.com/runner-manager/runner-manager/internal/runner/runnerusertest"
)

// testSlotUsers is the SlotUsers of this test process: runnerusertest's prefix, whose users
// TestMain removes. It fails the test unless run as root.
func testSlotUsers(t *testing.T) *SlotUsers {
	t.Helper()
	livetest.Root(t, "creating runner users")
	return &SlotUsers{Prefix: runnerusertest.Prefix()}
}

// testUser is slot's runner user of s, created if missing.
func testUser(t *testing.T, s *SlotUsers, slot int) User {
	t.Helper()
	u, err := s.Ensure(context.Background(), slot)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSlotUsersEnsureCreatesAnUnprivilegedUserOnce(t *testing.T) {
	s := testSlotUsers(t)
	u := testUser(t, s, 3)
	if u.Name != s.Prefix+"3" || u.UID == 0 || u.GID == 0 {
		t.Fatalf("Ensure(3) = %+v, want %s3 with a uid and gid other than 0", u, s.Prefix)
	}
	st := statT(t, u.Home)
	if st.Uid != u.UID {
		t.Errorf("home %s is owned by uid %d, want %d", u.Home, st.Uid, u.UID)
	}
	if st.Mode&0o7777 != 0o700 {
		t.Errorf("home %s has mode %o, want 0700: other slots and local users could read it", u.Home, st.Mode&0o7777)
	}
	again, err := s.Ensure(context.Background(), 3)
	if err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	if again != u {
		t.Errorf("second Ensure = %+v, want the same user %+v", again, u)
	}
	other := testUser(t, s, 4)
	if other.UID == u.UID {
		t.Errorf("slots 3 and 4 share uid %d", u.UID)
	}
}

func TestCleanUserKillsItsProcessesAndRemovesItsFiles(t *testing.T) {
	u := testUser(t, testSlotUsers(t), 0)
	leftTmp := filepath.Join("/tmp", u.Name+"-left")
	daemonTmp := filepath.Join("/tmp", u.Name+"-daemons")
	if err := os.WriteFile(daemonTmp, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(daemonTmp); os.Remove(leftTmp) })
	// A job that leaves a file in /tmp, a planted ~/.gitconfig and a background process.
	job := exec.Command("/bin/sh", "-c", `echo x > "$1"; echo '[core]' > "$HOME/.gitconfig"; mkdir -p "$HOME/.cache/d"; sleep 1000 & echo started; wait`, "sh", leftTmp)
	job.Env = []string{"HOME=" + u.Home, "PATH=/usr/bin:/bin"}
	job.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID}, Setsid: true}
	out, err := job.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		var b [8]byte
		_, _ = out.Read(b[:]) // "started": the files are written and sleep runs
		waited <- job.Wait()
	}()
	livetest.Eventually(t, "the job's background process", func() bool {
		pids, err := pidsOf(u.UID)
		return err == nil && len(pids) >= 2
	})

	if err := CleanUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err == nil {
		t.Error("the job exited cleanly; CleanUser should have killed it")
	}
	if pids, err := pidsOf(u.UID); err != nil || len(pids) != 0 {
		t.Errorf("processes of uid %d after CleanUser: %v (%v)", u.UID, pids, err)
	}
	for _, p := range []string{leftTmp, filepath.Join(u.Home, ".gitconfig"), filepath.Join(u.Home, ".cache")} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived CleanUser (%v)", p, err)
		}
	}
	if _, err := os.Stat(u.Home); err != nil {
		t.Errorf("CleanUser removed the home directory itself: %v", err)
	}
	if _, err := os.Stat(daemonTmp); err != nil {
		t.Errorf("CleanUser removed a file in /tmp that is not the user's: %v", err)
	}
}

func statT(t *testing.T, path string) *syscall.Stat_t {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t)
}

// Provision creates the missing users of slots 0..n-1 (what `service install` does), Existing
// lists them in slot order, and Remove deletes one with its home.
func TestSlotUsersProvisionExistingRemove(t *testing.T) {
	s := testSlotUsers(t)
	var missing []string
	for slot := range 2 {
		if _, err := lookupUser(s.Name(slot)); err != nil {
			missing = append(missing, s.Name(slot))
		}
	}
	created, err := s.Provision(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(created, missing) {
		t.Fatalf("Provision created %v, want the missing %v", created, missing)
	}
	if again, err := s.Provision(context.Background(), 2); err != nil || len(again) != 0 {
		t.Fatalf("second Provision = %v, %v; want nothing created", again, err)
	}
	names, err := s.Existing()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 2 || names[0] != s.Name(0) || names[1] != s.Name(1) {
		t.Fatalf("Existing = %v, want %s and %s first", names, s.Name(0), s.Name(1))
	}
	u, err := lookupUser(s.Name(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(context.Background(), u.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := lookupUser(u.Name); err == nil {
		t.Fatalf("%s still exists after Remove", u.Name)
	}
	if _, err := os.Stat(u.Home); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("home %s after Remove: %v, want it gone", u.Home, err)
	}
	if names, err := s.Existing(); err != nil || slices.Contains(names, u.Name) {
		t.Fatalf("Existing after Remove = %v, %v", names, err)
	}
}

// Existing lists only <Prefix><digits>, never a user whose name merely starts with the prefix.
func TestSlotUsersExistingMatchesSlotNamesOnly(t *testing.T) {
	s := &SlotUsers{Prefix: "root"} // /etc/passwd has "root" (no slot) and no root0
	if names, err := s.Existing(); err != nil || len(names) != 0 {
		t.Fatalf("Existing with prefix root = %v, %v; want none", names, err)
	}
}
