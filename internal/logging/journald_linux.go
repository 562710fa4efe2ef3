//go:build linux

package logging

import (
	"fmt"
	"os"
	"syscall"
)

// UnderJournal reports whether f is the stream systemd-journald reads: systemd sets JOURNAL_STREAM
// to "device:inode" of the service's stdout/stderr (systemd.exec(5)); a match means the lines are
// read by journald, which then takes a "<N>" syslog priority prefix from each one.
func UnderJournal(f *os.File) bool {
	v := os.Getenv("JOURNAL_STREAM")
	if v == "" || f == nil {
		return false
	}
	var dev, ino uint64
	if _, err := fmt.Sscanf(v, "%d:%d", &dev, &ino); err != nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Dev) == dev && st.Ino == ino
}
