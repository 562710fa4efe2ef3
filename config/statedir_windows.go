//go:build windows

package config

import (
	"os"
	"path/filepath"
)

// DefaultStateDir is daemon.state_dir's default on Windows: %ProgramData%\runner-manager, where
// `service install` puts the private binary, the config and the logs too (docs/operations.md,
// "Windows"). /var/lib would resolve to \var\lib on the current drive there.
var DefaultStateDir = filepath.Join(programData(), "runner-manager")

func programData() string {
	if d := os.Getenv("ProgramData"); d != "" {
		return d
	}
	return `C:\ProgramData`
}
