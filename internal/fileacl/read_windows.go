//go:build windows

package fileacl

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Read returns the owner and DACL of path (a file or directory). It is the only part of the
// package that talks to Windows; the rules are in WriteProblem and ReadProblem.
func Read(path string) (Security, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Security{}, err
	}
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return Security{}, fmt.Errorf("%s: reading its owner and access control list: %w", path, err)
	}
	s := Security{Path: path, Dir: fi.IsDir()}
	owner, _, err := sd.Owner()
	if err != nil || owner == nil {
		return Security{}, fmt.Errorf("%s: reading its owner: %v", path, err)
	}
	s.Owner = trustee(owner)
	dacl, _, err := sd.DACL()
	switch {
	case errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND), err == nil && dacl == nil:
		s.NullDACL = true
		return s, nil
	case err != nil:
		return Security{}, fmt.Errorf("%s: reading its access control list: %w", path, err)
	}
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return Security{}, fmt.Errorf("%s: reading entry %d of its access control list: %w", path, i, err)
		}
		a := ACE{Mask: uint32(ace.Mask), InheritOnly: ace.Header.AceFlags&windows.INHERIT_ONLY_ACE != 0}
		switch ace.Header.AceType {
		case windows.ACCESS_ALLOWED_ACE_TYPE, aceAllowedCallback:
		case windows.ACCESS_DENIED_ACE_TYPE, aceDeniedCallback:
			a.Deny = true
		default:
			// Object entries belong to directory-service objects, not files; one here is not
			// understood, and a rule that does not understand an entry must not accept it.
			return Security{}, fmt.Errorf("%s: its access control list has an entry of type %d this check does not read; reset it with icacls \"%s\" /reset", path, ace.Header.AceType, path)
		}
		a.Trustee = trustee((*windows.SID)(unsafe.Pointer(&ace.SidStart)))
		s.DACL = append(s.DACL, a)
	}
	return s, nil
}

// ACE types with the ACCESS_ALLOWED_ACE layout (the SID right after the mask).
const (
	aceAllowedCallback = 9
	aceDeniedCallback  = 10
)

func trustee(sid *windows.SID) Trustee {
	t := Trustee{SID: sid.String()}
	if account, domain, _, err := sid.LookupAccount(""); err == nil {
		t.Name = account
		if domain != "" {
			t.Name = domain + `\` + account
		}
	}
	return t
}

// Self returns the SID of the account this process runs as (the service's account).
func Self() (string, error) {
	tok, err := windows.OpenCurrentProcessToken()
	if err != nil {
		return "", fmt.Errorf("reading this process's account: %w", err)
	}
	defer tok.Close()
	u, err := tok.GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("reading this process's account: %w", err)
	}
	return u.User.Sid.String(), nil
}

// TrustedSelf is Trusted for this process's account.
func TrustedSelf() (map[string]bool, error) {
	self, err := Self()
	if err != nil {
		return nil, err
	}
	return Trusted(self), nil
}
