//go:build windows

package diag

import "testing"

// mkfifo: Windows has no FIFO in a directory (named pipes live in their own namespace).
func mkfifo(*testing.T, string) bool { return false }
