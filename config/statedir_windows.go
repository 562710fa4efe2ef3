//go:build windows

package config

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// DefaultStateDir is daemon.state_dir's default on Windows: %ProgramData%\runner-manager, where
// `service install` puts the private binary, the config and the logs too (docs/operations.md,
// "Windows"). /var/lib would resolve to \var\lib on the current drive there.
var DefaultStateDir = filepath.Join(programData(), "runner-manager")

// programData asks Windows for the ProgramData folder rather than reading %ProgramData%: a
// service's environment need not carry the operator's (wine 8.0 gives its services
// C:\users\Public there), and the CLI and the service must find the same state directory.
func programData() string {
	if d, err := windows.KnownFolderPath(windows.FOLDERID_ProgramData, 0); err == nil && d != "" {
		return d
	}
	if d := os.Getenv("ProgramData"); d != "" {
		return d
	}
	return `C:\ProgramData`
}
