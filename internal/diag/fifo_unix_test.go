//go:build !windows

package diag

import (
	"syscall"
	"testing"
)

// mkfifo makes a FIFO at path; it reports whether the system has them.
func mkfifo(t *testing.T, path string) bool {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return true
}
