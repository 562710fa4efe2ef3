//go:build windows

package config

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/runner-manager/runner-manager/internal/fileacl"
)

// permProblem is secretProblem's rule on Windows, where a file has no mode bits: the file's owner
// and access control list, as internal/fileacl reads them. Anyone but SYSTEM, Administrators,
// TrustedInstaller and the daemon's account who can change the file is an error; a broad group
// (Users, Everyone) that can read it is an error, a named account or group a warning, as the
// group bits are on unix. The rule is tested on Linux in internal/fileacl.
func permProblem(path string, _ fs.FileInfo) (string, Severity) {
	sec, trusted, err := readACL(path)
	if err != nil {
		return fmt.Sprintf("cannot be checked: %v", err), SeverityError
	}
	if err := sec.WriteProblem(trusted); err != nil {
		return fmt.Sprintf("can be changed by others than SYSTEM, Administrators and the daemon's account (%s): anyone who can change it can swap the credential; %s",
			strings.TrimPrefix(err.Error(), path+" "), fileacl.Fix(path)), SeverityError
	}
	switch who, broad := sec.ReadProblem(trusted); {
	case broad:
		return fmt.Sprintf("is readable by %s: %s", who, fileacl.Fix(path)), SeverityError
	case who != "":
		return fmt.Sprintf("is readable by %s: remove them unless they need it (%s)", who, fileacl.Fix(path)), SeverityWarning
	}
	return "", ""
}

// readableBy says who besides the trusted accounts may read the config file.
func readableBy(path string, _ fs.FileInfo) (who, fix string) {
	sec, trusted, err := readACL(path)
	if err != nil {
		return "", "" // the config file was just read; a failed ACL read is not a finding about it
	}
	who, _ = sec.ReadProblem(trusted)
	return who, fileacl.Fix(path) + ", or move the values to env_file, a file only SYSTEM, Administrators and the daemon's account can read"
}

func readACL(path string) (fileacl.Security, map[string]bool, error) {
	trusted, err := fileacl.TrustedSelf()
	if err != nil {
		return fileacl.Security{}, nil, err
	}
	sec, err := fileacl.Read(path)
	return sec, trusted, err
}
