//go:build windows

package doctor

import (
	"io/fs"

	"github.com/runner-manager/runner-manager/internal/fileacl"
)

// ownerOf: Windows has no uid; aclProblem decides instead.
func ownerOf(fs.FileInfo) int { return -1 }

// aclProblem applies internal/fileacl's rule (the credential files' and self-update's) to a
// directory: Windows has no mode bits, so its owner and access control list decide.
func aclProblem(path string) (decided bool, err error) {
	trusted, err := fileacl.TrustedSelf()
	if err != nil {
		return true, err
	}
	sec, err := fileacl.Read(path)
	if err != nil {
		return true, err
	}
	return true, sec.WriteProblem(trusted)
}

func aclFix(path string) string { return fileacl.Fix(path) }
