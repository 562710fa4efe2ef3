//go:build !linux

package logging

import "os"

// UnderJournal is false off Linux: systemd-journald is Linux's (on Windows and macOS the daemon's
// log goes where docs/operations.md says).
func UnderJournal(*os.File) bool { return false }
