//go:build linux

package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// onThread runs fn on an OS thread of its own that setup prepares (dropped to a slot user's
// credentials, or moved to a private mount namespace) and that never runs anything else: the
// goroutine ends still locked to it, so the Go runtime ends the thread rather than reuse it
// (runtime.LockOSThread). Credentials and namespaces are per thread in Linux; the raw syscalls
// below change this one thread only, where syscall.Setresuid would change the whole daemon.
func onThread(setup, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		if unix.Gettid() == unix.Getpid() {
			// The runtime never ends the main thread (it parks it for good), and the process's
			// credentials as /proc and kill(2) see them are the main thread's. Holding it, run on
			// another thread instead. TestOnThreadNeverChangesTheMainThread.
			done <- onThread(setup, fn)
			runtime.UnlockOSThread()
			return
		}
		if err := setup(); err != nil {
			done <- err
			return
		}
		done <- fn()
	}()
	return <-done
}

// asUser is a setup for onThread that gives the thread u's uid and gid and no supplementary
// groups, for good (saved ids too): what fn does, u could have done itself.
func asUser(u User) func() error {
	return func() error {
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			return fmt.Errorf("drop supplementary groups: %w", e)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(u.GID), uintptr(u.GID), uintptr(u.GID)); e != 0 {
			return fmt.Errorf("become gid %d: %w", u.GID, e)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(u.UID), uintptr(u.UID), uintptr(u.UID)); e != 0 {
			return fmt.Errorf("become uid %d: %w", u.UID, e)
		}
		return nil
	}
}

// clearKeyrings empties u's user and user-session keyrings and its persistent keyring, as u: they
// belong to the uid, not to a process, so a key one job adds is there for every later job of the
// slot, across daemon restarts, until cleared (TestCleanUserClearsKernelObjects).
func clearKeyrings(u User) error {
	err := onThread(asUser(u), func() error {
		var errs []error
		for _, spec := range []int{unix.KEY_SPEC_USER_KEYRING, unix.KEY_SPEC_USER_SESSION_KEYRING} {
			id, err := unix.KeyctlGetKeyringID(spec, false)
			if errors.Is(err, unix.ENOKEY) {
				continue // never made: nothing in it
			}
			if err == nil {
				_, err = unix.KeyctlInt(unix.KEYCTL_CLEAR, id, 0, 0, 0)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
		// The persistent keyring is fetched into this thread's own keyring, which ends with it.
		id, err := unix.KeyctlInt(unix.KEYCTL_GET_PERSISTENT, -1, unix.KEY_SPEC_THREAD_KEYRING, 0, 0)
		if err == nil {
			_, err = unix.KeyctlInt(unix.KEYCTL_CLEAR, id, 0, 0, 0)
		}
		if err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
			errs = append(errs, fmt.Errorf("persistent keyring: %w", err))
		}
		return errors.Join(errs...)
	})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		// A kernel without keys keeps none. EPERM on a uid's own keyring is a seccomp filter (a
		// container's default profile) that jobs, the daemon's descendants, inherit too.
		return nil
	}
	if err != nil {
		return fmt.Errorf("clear the keyrings of uid %d: %w", u.UID, err)
	}
	return nil
}

// sysvIPC is one SysV IPC kind: its /proc/sysvipc table and how an object is removed by id.
type sysvIPC struct {
	table, idColumn string
	remove          func(id int) error
}

var sysvKinds = []sysvIPC{
	{"shm", "shmid", func(id int) error { _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); return err }},
	{"sem", "semid", func(id int) error {
		return rawErr(unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID, 0, 0, 0))
	}},
	{"msg", "msqid", func(id int) error { return rawErr(unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0)) }},
}

func rawErr(_, _ uintptr, e unix.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// removeSysVIPC removes every SysV shared memory segment, semaphore set and message queue that
// uid owns or created (an owner can hand an object to another uid; it stays the creator's). They
// outlive their processes, and a job may leave them readable to everyone.
func removeSysVIPC(uid uint32) error {
	var errs []error
	for _, k := range sysvKinds {
		data, err := os.ReadFile("/proc/sysvipc/" + k.table)
		if errors.Is(err, os.ErrNotExist) {
			continue // a kernel without SysV IPC
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ids, err := sysvIDsOf(data, k.idColumn, uid)
		if err != nil {
			errs = append(errs, fmt.Errorf("/proc/sysvipc/%s: %w", k.table, err))
		}
		for _, id := range ids {
			// EINVAL, EIDRM: removed since it was listed.
			if err := k.remove(id); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EIDRM) {
				errs = append(errs, fmt.Errorf("remove SysV %s %d: %w", k.table, id, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove the SysV IPC objects of uid %d: %w", uid, err)
	}
	return nil
}

// sysvIDsOf reads a /proc/sysvipc table (a header line naming the columns, then one object a
// line) and returns the ids (in idColumn) of the objects whose uid or cuid is uid.
func sysvIDsOf(table []byte, idColumn string, uid uint32) ([]int, error) {
	sc := bufio.NewScanner(bytes.NewReader(table))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	if !sc.Scan() {
		return nil, sc.Err()
	}
	header := strings.Fields(sc.Text())
	idCol, uidCol, cuidCol := slices.Index(header, idColumn), slices.Index(header, "uid"), slices.Index(header, "cuid")
	if idCol < 0 || uidCol < 0 || cuidCol < 0 {
		return nil, fmt.Errorf("no %s, uid and cuid columns in its header %q", idColumn, sc.Text())
	}
	want := strconv.FormatUint(uint64(uid), 10)
	var ids []int
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) <= max(idCol, uidCol, cuidCol) || (f[uidCol] != want && f[cuidCol] != want) {
			continue
		}
		if id, err := strconv.Atoi(f[idCol]); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, sc.Err()
}

// mqueueMount is where removeMqueues mounts the mqueue filesystem, in a mount namespace only its
// own thread sees: any existing directory will do, the host's stays as it was.
const mqueueMount = "/tmp"

// mountedMqueue is where hosts and containers that mount an mqueue filesystem put it;
// mqueueMagic is that filesystem's type (linux/magic.h MQUEUE_MAGIC).
const (
	mountedMqueue = "/dev/mqueue"
	mqueueMagic   = 0x19800202
)

// removeMqueues unlinks every POSIX message queue uid owns. Queues live in the IPC namespace, not
// in any directory. Where an mqueue filesystem is mounted at /dev/mqueue (containers have one,
// and may not mount another) the queues are removed there; otherwise a thread of its own
// unshares its mount namespace and mounts one there (same IPC namespace, so it shows the host's
// queues) without touching the host's mounts.
func removeMqueues(uid uint32) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(mountedMqueue, &fs); err == nil && fs.Type == mqueueMagic {
		if err := removeOwned(mountedMqueue, uid, false); err != nil {
			return fmt.Errorf("remove the POSIX message queues of uid %d: %w", uid, err)
		}
		return nil
	}
	private := func() error {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("unshare the mount namespace: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("make the private mount namespace private: %w", err)
		}
		return unix.Mount("mqueue", mqueueMount, "mqueue", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	}
	err := onThread(private, func() error { return removeOwned(mqueueMount, uid, false) })
	if errors.Is(err, unix.ENODEV) {
		return nil // a kernel without POSIX message queues
	}
	if err != nil {
		return fmt.Errorf("remove the POSIX message queues of uid %d: %w (the daemon needs CAP_SYS_ADMIN to list them, or an mqueue filesystem mounted at %s)", uid, err, mountedMqueue)
	}
	return nil
}
