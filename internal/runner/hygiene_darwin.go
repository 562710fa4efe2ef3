//go:build darwin

package runner

import (
	"os"

	"golang.org/x/sys/unix"
)

// scratchDirs are the shared writable directories a job can leave files in. macOS's /tmp and
// /var/tmp are links into /private, which removeOwned never follows, so the real directories are
// named. /private/var/folders holds each user's own temporary and cache directories
// (DARWIN_USER_TEMP_DIR and DARWIN_USER_CACHE_DIR): the slot's go with everything it owns there,
// and macOS makes them again when the next job asks for them.
var scratchDirs = []string{"/private/tmp", "/private/var/tmp", "/private/var/folders"}

// scrubUser removes what u's last job left in files (scrubFiles). macOS has no kernel keyrings
// and no POSIX message queue names to list; SysV IPC objects a job leaves are not removed there
// (docs/security.md, macOS). Never run on a Mac by this project's tests.
func scrubUser(u User) error { return scrubFiles(u) }

// readNames lists the directory open at fd through a descriptor of its own, never by path. macOS
// has no getdents: os reads the descriptor with fdopendir and readdir.
func readNames(fd int) ([]string, error) {
	own, err := unix.Openat(fd, ".", dirFlags, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(own), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}
