// Package fileacl decides whether a file on Windows is safe to trust: a binary self-update may
// install, a credential file, a config file holding secrets. Windows has no mode bits (Go reports
// 0666 or 0444 for every file), so the decision reads the file's owner and DACL instead. It is the
// one owner of that rule: selfupdate (in place of StrictModes), config's credential-file check and
// internal/secretfile all ask it.
//
// The decision (Security.WriteProblem, Security.ReadProblem) is platform-neutral and table-tested
// on Linux; Read, which fills a Security from GetNamedSecurityInfo, is a thin Windows-only layer.
// It never changes an ACL and never reads a file's content.
package fileacl

import (
	"fmt"
	"strings"
)

// Well-known SIDs the rules name.
const (
	SIDSystem           = "S-1-5-18"
	SIDAdministrators   = "S-1-5-32-544"
	SIDTrustedInstaller = "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"
	SIDOwnerRights      = "S-1-3-4" // the object's owner, whoever it is: the owner is checked itself
	SIDEveryone         = "S-1-1-0"
	SIDUsers            = "S-1-5-32-545"
	SIDAuthenticated    = "S-1-5-11"
)

// Access rights (winnt.h). Directory rights share the file rights' bits: FILE_ADD_FILE is
// FILE_WRITE_DATA, FILE_ADD_SUBDIRECTORY is FILE_APPEND_DATA.
const (
	FileReadData        = 0x00000001
	FileWriteData       = 0x00000002 // FILE_ADD_FILE on a directory
	FileAppendData      = 0x00000004 // FILE_ADD_SUBDIRECTORY on a directory
	FileWriteEA         = 0x00000010
	FileDeleteChild     = 0x00000040
	FileWriteAttributes = 0x00000100
	Delete              = 0x00010000
	WriteDAC            = 0x00040000
	WriteOwner          = 0x00080000
	GenericAll          = 0x10000000
	GenericWrite        = 0x40000000
	GenericRead         = 0x80000000
	MaximumAllowed      = 0x02000000
)

// Rights that let a trustee change what a path names. On a file: its content (write, append,
// extended attributes), remove or rename it (delete), or give itself those (WRITE_DAC,
// WRITE_OWNER). On a directory the same, plus FILE_DELETE_CHILD (remove or rename any entry) and
// FILE_ADD_FILE (plant a file beside the binary, such as a DLL it would load). FILE_ADD_SUBDIRECTORY
// alone is allowed on a directory: it can neither replace an entry nor put a file beside one, and
// Windows grants it to Authenticated Users on every drive's root. TestWriteProblem.
const (
	fileWriteRights = FileWriteData | FileAppendData | FileWriteEA | Delete | WriteDAC | WriteOwner | GenericWrite | GenericAll | MaximumAllowed
	dirWriteRights  = FileWriteData | FileDeleteChild | Delete | WriteDAC | WriteOwner | GenericWrite | GenericAll | MaximumAllowed
	readRights      = FileReadData | GenericRead | GenericAll | MaximumAllowed
)

// Trustee is an account or group, by SID; Name is its DOMAIN\name for messages ("" if unknown).
type Trustee struct {
	SID, Name string
}

func (t Trustee) String() string {
	if t.Name == "" {
		return t.SID
	}
	return t.Name + " (" + t.SID + ")"
}

// ACE is one entry of a DACL.
type ACE struct {
	Trustee     Trustee
	Deny        bool   // an access-denied entry: it only takes rights away, so the rules skip it
	Mask        uint32 // the rights it allows or denies
	InheritOnly bool   // applies only to children, not to the object itself
}

// Security is what the rules need of one file or directory.
type Security struct {
	Path     string
	Dir      bool
	Owner    Trustee
	NullDACL bool // no DACL at all: everyone has every right
	DACL     []ACE
}

// Trusted is the set of SIDs that may change a trusted file: SYSTEM, Administrators,
// TrustedInstaller and the daemon's own account (self, "" when unknown).
func Trusted(self string) map[string]bool {
	t := map[string]bool{SIDSystem: true, SIDAdministrators: true, SIDTrustedInstaller: true}
	if self != "" {
		t[self] = true
	}
	return t
}

// WriteProblem returns nil when only trusted trustees can change what s names, or an error naming
// the owner or the first trustee that can, and with which rights. Denied entries are not credited:
// a deny for one trustee does not take a right from another, and a conservative refusal is better
// than a second implementation of Windows' access check. TestWriteProblem.
func (s Security) WriteProblem(trusted map[string]bool) error {
	if !trusted[s.Owner.SID] {
		return fmt.Errorf("%s is owned by %s, who can change its permissions", s.Path, s.Owner)
	}
	if s.NullDACL {
		return fmt.Errorf("%s has no access control list (a NULL DACL): every user can change it", s.Path)
	}
	rights := uint32(fileWriteRights)
	if s.Dir {
		rights = dirWriteRights
	}
	for _, a := range s.applying() {
		if m := a.Mask & rights; m != 0 && !trusted[a.Trustee.SID] {
			return fmt.Errorf("%s grants %s to %s", s.Path, RightsString(m), a.Trustee)
		}
	}
	return nil
}

// ReadProblem returns who besides the trusted trustees can read s: broad is true when one of them
// is a group every user or every job is in (Everyone, Users, Authenticated Users and the like),
// the Windows counterpart of a file readable by every user; otherwise who is a named account or
// group, the counterpart of a group-readable file. who is "" when nobody else can read it.
func (s Security) ReadProblem(trusted map[string]bool) (who string, broad bool) {
	if s.NullDACL {
		return "every user (the file has no access control list)", true
	}
	var named []string
	for _, a := range s.applying() {
		if a.Mask&readRights == 0 || trusted[a.Trustee.SID] || a.Trustee.SID == SIDOwnerRights {
			continue
		}
		if broadGroup(a.Trustee.SID) {
			return a.Trustee.String(), true
		}
		named = append(named, a.Trustee.String())
	}
	return strings.Join(named, ", "), false
}

// applying lists the allow entries that apply to the object itself. OWNER RIGHTS stands for the
// owner, whom WriteProblem checks first.
func (s Security) applying() []ACE {
	var out []ACE
	for _, a := range s.DACL {
		if a.Deny || a.InheritOnly || a.Trustee.SID == SIDOwnerRights {
			continue
		}
		out = append(out, a)
	}
	return out
}

// broadGroup reports the well-known groups that hold every local user, every logon or every job:
// a right granted to one of them is granted to every runner.
func broadGroup(sid string) bool {
	switch sid {
	case SIDEveryone, SIDUsers, SIDAuthenticated,
		"S-1-5-32-546", // Guests
		"S-1-5-7",      // ANONYMOUS LOGON
		"S-1-5-2",      // NETWORK
		"S-1-5-3",      // BATCH
		"S-1-5-4",      // INTERACTIVE
		"S-1-5-6",      // SERVICE
		"S-1-5-13",     // TERMINAL SERVER USER
		"S-1-5-14",     // REMOTE INTERACTIVE LOGON
		"S-1-5-15",     // THIS ORGANIZATION
		"S-1-2-0",      // LOCAL
		"S-1-2-1":      // CONSOLE LOGON
		return true
	}
	return false
}

// RightsString names the rights in m as icacls does (WD, AD, WEA, DC, D, WDAC, WO, GW, GA, MA).
func RightsString(m uint32) string {
	names := []struct {
		bit  uint32
		name string
	}{
		{GenericAll, "full control (GA)"}, {GenericWrite, "write (GW)"}, {MaximumAllowed, "maximum allowed (MA)"},
		{FileWriteData, "write data/add file (WD)"}, {FileAppendData, "append data/add subdirectory (AD)"},
		{FileWriteEA, "write extended attributes (WEA)"}, {FileDeleteChild, "delete child (DC)"},
		{Delete, "delete (D)"}, {WriteDAC, "change permissions (WDAC)"}, {WriteOwner, "take ownership (WO)"},
		{FileReadData, "read data (RD)"}, {GenericRead, "read (GR)"},
	}
	var out []string
	for _, n := range names {
		if m&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	return strings.Join(out, ", ")
}

// Fix is the operator's way out of a refusal: icacls commands that leave path to SYSTEM and
// Administrators alone (the service's account, if not LocalSystem, is granted read separately).
// The path is quoted as cmd.exe reads it (not Go's %q, which would double each backslash).
// TestFixQuotesForCmd.
func Fix(path string) string {
	return fmt.Sprintf(`run icacls "%s" /inheritance:r /grant:r SYSTEM:F Administrators:F and icacls "%s" /setowner Administrators (add /grant:r "<service account>:RX" if the service does not run as LocalSystem)`, path, path)
}
