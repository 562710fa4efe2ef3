//go:build !windows

package config

import (
	"fmt"
	"io/fs"
	"syscall"
)

// permProblem is secretProblem's rule on the file's mode: who besides its owner may write or read
// it. TestSecretFileModes.
func permProblem(_ string, fi fs.FileInfo) (string, Severity) {
	perm := fi.Mode().Perm()
	switch {
	case perm&0o022 != 0:
		return fmt.Sprintf("is writable by its group or by every user (mode %04o): anyone who can write it can swap the credential; run chmod 600 on it", perm), SeverityError
	case perm&0o004 != 0:
		return fmt.Sprintf("is readable by every user (mode %04o): run chmod 600 on it", perm), SeverityError
	case perm&0o040 != 0:
		return fmt.Sprintf("is readable by its group (mode %04o): chmod 600 unless the group needs it", perm), SeverityWarning
	}
	return "", ""
}

// readableBy says who besides root and the file's owner may read the config file ("" for nobody)
// and how to stop it. A group other than root's may hold a runner user. TestReadableConfigWarning.
func readableBy(_ string, fi fs.FileInfo) (who, fix string) {
	perm := fi.Mode().Perm()
	fix = "chmod 600 the file (or 640 with group root), or move the values to env_file, a chmod 600 file"
	switch st, _ := fi.Sys().(*syscall.Stat_t); {
	case perm&0o004 != 0:
		return fmt.Sprintf("every local user (mode %04o)", perm), fix
	case perm&0o040 != 0 && st != nil && st.Gid != 0:
		return fmt.Sprintf("its group (gid %d) (mode %04o)", st.Gid, perm), fix
	}
	return "", ""
}
