//go:build linux

package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// swapTries is how many times TestRemoveOwnedIsNotRedirected races hygiene (issue 26: 300).
const swapTries = 300

// A second slot (B) keeps swapping a directory it owns for a link to a sibling directory that
// holds a root-owned file, while slot A's hygiene removes A's file inside it (issue 26 item 3:
// the old path-based removal deleted the root-owned file in 98 of 300 tries). Over every try no
// root-owned file is deleted, and A's own leftovers are gone every time.
func TestRemoveOwnedIsNotRedirected(t *testing.T) {
	users := testSlotUsers(t)
	a, b := testUser(t, users, 0), testUser(t, users, 1)
	base, err := os.MkdirTemp("", "rmt-swap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	must(t, os.Chmod(base, 0o1777)) // a scratch directory, as /tmp
	// base/b is B's; b/d is B's and open to A (a job may open its directories to everyone);
	// b/victim and b/victim/x are root's. B swaps b/d for the link b/d -> victim.
	bDir, d, victim := filepath.Join(base, "b"), filepath.Join(base, "b", "d"), filepath.Join(base, "b", "victim")
	must(t, os.Mkdir(bDir, 0o755), os.Chown(bDir, int(b.UID), int(b.GID)))
	must(t, os.Mkdir(d, 0o777), os.Chown(d, int(b.UID), int(b.GID)), os.Chmod(d, 0o777))
	must(t, os.Mkdir(victim, 0o755))

	deleted, baitLeft := 0, 0
	for try := range swapTries {
		victimFile := filepath.Join(victim, "x")
		must(t, os.WriteFile(victimFile, []byte("root's"), 0o644))
		// A's leftovers: the bait in B's directory, and its own files, directories and links.
		own := []string{filepath.Join(base, "a-file"), filepath.Join(base, "a-dir"), filepath.Join(base, "a-link")}
		plantAs(t, a, filepath.Join(d, "x"), own)

		stop, swaps := raceSwap(t, b, d)
		err := removeOwned(base, a.UID, false)
		stop()
		if err != nil {
			t.Fatalf("try %d: removeOwned: %v", try, err)
		}
		if *swaps == 0 {
			t.Fatalf("try %d: the racing slot never swapped its directory, so the try proves nothing", try)
		}
		if _, err := os.Lstat(victimFile); err != nil {
			deleted++
		}
		for _, p := range own {
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("try %d: slot A's leftover %s survived hygiene (%v)", try, p, err)
			}
		}
		if _, err := os.Lstat(filepath.Join(d, "x")); err == nil {
			baitLeft++ // hidden by B's swap for this pass (B can hide what is in its own directory)
			must(t, os.Remove(filepath.Join(d, "x")))
		}
	}
	if deleted > 0 {
		t.Errorf("hygiene of slot A deleted a root-owned file through slot B's swapped link in %d of %d tries", deleted, swapTries)
	}
	t.Logf("%d tries: %d root-owned files deleted; A's file inside B's swapping directory left by %d passes", swapTries, deleted, baitLeft)
}

// plantAs leaves slot user u's files: bait (a file in another slot's directory) and own, a file,
// a directory tree with a directory u locked (mode 0) and a link to a root-owned file.
func plantAs(t *testing.T, u User, bait string, own []string) {
	t.Helper()
	err := onThread(asUser(u), func() error {
		return errors.Join(
			os.WriteFile(bait, []byte("a"), 0o644),
			os.WriteFile(own[0], []byte("a"), 0o644),
			os.MkdirAll(filepath.Join(own[1], "locked"), 0o755),
			os.WriteFile(filepath.Join(own[1], "locked", "f"), []byte("a"), 0o644),
			os.Chmod(filepath.Join(own[1], "locked"), 0),
			os.Symlink("/etc/passwd", own[2]),
		)
	})
	if err != nil {
		t.Fatalf("plant slot %s's leftovers: %v", u.Name, err)
	}
}

// raceSwap starts slot user u exchanging the directory d with a link to its sibling "victim"
// (renameat2 RENAME_EXCHANGE: the name d is always one or the other), as fast as it can, on a
// thread with u's credentials. stop ends it with d a directory again.
func raceSwap(t *testing.T, u User, d string) (stop func(), swaps *int64) {
	t.Helper()
	link := d + ".link"
	if err := onThread(asUser(u), func() error { return os.Symlink("victim", link) }); err != nil && !errors.Is(err, fs.ErrExist) {
		t.Fatal(err)
	}
	var done atomic.Bool
	var n int64
	started := make(chan struct{})
	ended := make(chan error, 1)
	go func() {
		ended <- onThread(asUser(u), func() error {
			for i := 0; ; i++ {
				if i == 2 {
					close(started)
				}
				if done.Load() && i%2 == 0 {
					return nil // an even number of exchanges: d is the directory again
				}
				if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
					return err
				}
				atomic.AddInt64(&n, 1)
			}
		})
	}()
	select {
	case <-started:
	case err := <-ended:
		t.Fatalf("the racing slot stopped before it swapped: %v", err)
	}
	return func() {
		done.Store(true)
		if err := <-ended; err != nil {
			t.Fatalf("the racing slot failed: %v", err)
		}
	}, &n
}

func must(t *testing.T, errs ...error) {
	t.Helper()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// A job leaves kernel objects that outlive its processes: a key in its user keyring, SysV shared
// memory, semaphores and a message queue (0644: readable by every local user), a POSIX message
// queue and a file in /run/lock; and it opens its home to everyone. After CleanUser none of them
// is left, and the home is 0700 (issue 26 item 3).
func TestCleanUserClearsKernelObjects(t *testing.T) {
	u := testUser(t, testSlotUsers(t), 2)
	tag := fmt.Sprintf("rmt-%d-left", os.Getpid())
	mq := "/" + tag
	lockFile := filepath.Join("/run/lock", tag)
	t.Cleanup(func() { os.Remove(lockFile); mqUnlink(mq) })
	must(t, os.Chmod(u.Home, 0o755))
	var shm, sem, msg int
	err := onThread(asUser(u), func() error {
		var errs [6]error
		_, errs[0] = unix.AddKey("user", tag, []byte("a secret"), unix.KEY_SPEC_USER_KEYRING)
		shm, errs[1] = unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o644)
		sem, errs[2] = rawInt(unix.Syscall(unix.SYS_SEMGET, unix.IPC_PRIVATE, 1, unix.IPC_CREAT|0o644))
		msg, errs[3] = rawInt(unix.Syscall(unix.SYS_MSGGET, unix.IPC_PRIVATE, unix.IPC_CREAT|0o644, 0))
		var fd int
		fd, errs[4] = mqOpen(mq, unix.O_CREAT|unix.O_RDWR)
		if errs[4] == nil {
			unix.Close(fd)
		}
		errs[5] = os.WriteFile(lockFile, []byte("a"), 0o644)
		return errors.Join(errs[:]...)
	})
	if err != nil {
		t.Fatalf("the job's leftovers: %v", err)
	}
	left := func() []string {
		var l []string
		if err := onThread(asUser(u), func() error {
			_, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", tag, 0)
			return err
		}); err == nil {
			l = append(l, "key in the user keyring")
		}
		for _, k := range []struct {
			table, col string
			id         int
		}{{"shm", "shmid", shm}, {"sem", "semid", sem}, {"msg", "msqid", msg}} {
			data, err := os.ReadFile("/proc/sysvipc/" + k.table)
			must(t, err)
			ids, err := sysvIDsOf(data, k.col, u.UID)
			must(t, err)
			if slices.Contains(ids, k.id) {
				l = append(l, "SysV "+k.table)
			}
		}
		if fd, err := mqOpen(mq, unix.O_RDONLY); err == nil {
			unix.Close(fd)
			l = append(l, "POSIX message queue")
		}
		if _, err := os.Lstat(lockFile); err == nil {
			l = append(l, lockFile)
		}
		if st := statT(t, u.Home); st.Mode&0o777 != 0o700 {
			l = append(l, fmt.Sprintf("home mode %o", st.Mode&0o777))
		}
		return l
	}
	if l := left(); len(l) != 7 {
		t.Fatalf("before CleanUser the test sees only %v of the job's 7 leftovers: it could not see them after either", l)
	}
	if err := CleanUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	if l := left(); len(l) > 0 {
		t.Errorf("left after CleanUser: %v", l)
	}
}

func rawInt(r, _ uintptr, e unix.Errno) (int, error) {
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func mqOpen(name string, flags int) (int, error) {
	p, err := unix.BytePtrFromString(name[1:]) // the syscall takes the name without its slash
	if err != nil {
		return -1, err
	}
	return rawInt(unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)), uintptr(flags), 0o644, 0, 0, 0))
}

func mqUnlink(name string) {
	if p, err := unix.BytePtrFromString(name[1:]); err == nil {
		_, _, _ = unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(p)), 0, 0)
	}
}

func TestSysvIDsOf(t *testing.T) {
	table := `       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime
         0         11   644                  4096   100     0      0  1001  1001  1001  1001          0
         0         12   644                  4096   100     0      0     0     0  1001  1001          0
         0         13   600                  4096   100     0      0  1001  1001     0     0          0
         0         14   600                  4096   100     0      0  1002  1002  1002  1002          0
`
	for _, tc := range []struct {
		name string
		uid  uint32
		want []int
	}{
		{"owner or creator", 1001, []int{11, 12, 13}},
		{"another uid", 1002, []int{14}},
		{"none", 7, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sysvIDsOf([]byte(table), "shmid", tc.uid)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("sysvIDsOf(uid %d) = %v, %v; want %v", tc.uid, got, err, tc.want)
			}
		})
	}
	if _, err := sysvIDsOf([]byte("key id perms\n"), "shmid", 1); err == nil {
		t.Error("a header without shmid, uid and cuid is accepted")
	}
}

// The credentials /proc shows for the daemon, and that kill(2) checks, are its main thread's: a
// thread onThread drops to a slot user must never be that one, or hygiene would kill the daemon.
// The runtime puts onThread's goroutine on the main thread now and then (without the check,
// the first call here already did in 3 of 5 runs).
func TestOnThreadNeverChangesTheMainThread(t *testing.T) {
	u := testUser(t, testSlotUsers(t), 0)
	for i := range 200 {
		if err := onThread(asUser(u), func() error { return nil }); err != nil {
			t.Fatal(err)
		}
		if uid := mainThreadUID(t); uid != 0 {
			t.Fatalf("after %d calls of onThread the test process's main thread runs as uid %d, want 0", i+1, uid)
		}
	}
}

// mainThreadUID is the real uid /proc shows for this process: its main thread's.
func mainThreadUID(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	must(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			uid, err := strconv.Atoi(f[1])
			must(t, err)
			return uid
		}
	}
	t.Fatal("no Uid line in /proc/self/status")
	return -1
}
