//go:build windows

package selfupdate

import (
	"io/fs"

	"github.com/runner-manager/runner-manager/internal/fileacl"
)

func sourceFix(string) string {
	return "only SYSTEM, Administrators, TrustedInstaller or the service's account may be able to change it or a directory above it (docs/upgrades.md, \"Self-update on Windows\"): for the file or directory named, " + fileacl.Fix("<path>")
}

// checkEntry applies internal/fileacl's rule (the one the credential files pass) to p: its owner
// and every entry of its access control list. A symbolic link's own ACL is not what a writer
// swaps; its directory decides, and the resolved chain is checked on its own. euid has no meaning
// on Windows: the service's account is read from the process token.
func checkEntry(p string, fi fs.FileInfo, _ int) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	trusted, err := fileacl.TrustedSelf()
	if err != nil {
		return err
	}
	sec, err := fileacl.Read(p)
	if err != nil {
		return err
	}
	return sec.WriteProblem(trusted)
}
