//go:build linux

package runner

import (
	"errors"

	"golang.org/x/sys/unix"
)

// scratchDirs are the shared writable directories a job can leave files in. /var/lock is most
// often a link to /run/lock: opened without following links, it is then skipped.
var scratchDirs = []string{"/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock"}

// scrubUser removes what u's last job left besides processes (killed before it runs): every file
// in u's home, u's files in the scratch directories, u's kernel keyrings, SysV IPC objects and
// POSIX message queues; and it makes u's home 0700 again. TestCleanUserClearsKernelObjects.
func scrubUser(u User) error {
	return errors.Join(scrubFiles(u), clearKeyrings(u), removeSysVIPC(u.UID), removeMqueues(u.UID))
}

// readNames lists the directory open at fd through a descriptor of its own (reading moves the
// offset), never by path.
func readNames(fd int) ([]string, error) {
	own, err := unix.Openat(fd, ".", dirFlags, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(own)
	var names []string
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(own, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
