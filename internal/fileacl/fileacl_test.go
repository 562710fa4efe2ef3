package fileacl

import (
	"strings"
	"testing"
)

const selfSID = "S-1-5-21-1-2-3-1001"

var (
	system  = Trustee{SID: SIDSystem, Name: `NT AUTHORITY\SYSTEM`}
	admins  = Trustee{SID: SIDAdministrators, Name: `BUILTIN\Administrators`}
	ti      = Trustee{SID: SIDTrustedInstaller, Name: `NT SERVICE\TrustedInstaller`}
	self    = Trustee{SID: selfSID, Name: `HOST\runner-manager`}
	users   = Trustee{SID: SIDUsers, Name: `BUILTIN\Users`}
	authn   = Trustee{SID: SIDAuthenticated, Name: `NT AUTHORITY\Authenticated Users`}
	alice   = Trustee{SID: "S-1-5-21-1-2-3-1002", Name: `HOST\alice`}
	ownerRt = Trustee{SID: SIDOwnerRights, Name: `OWNER RIGHTS`}
)

// The default ACL of a file under C:\Program Files (inherited): what an installer leaves.
var programFiles = []ACE{
	{Trustee: ti, Mask: GenericAll},
	{Trustee: system, Mask: GenericAll},
	{Trustee: admins, Mask: GenericAll},
	{Trustee: users, Mask: GenericRead | 0x20 /* execute */},
	{Trustee: Trustee{SID: "S-1-15-2-1", Name: `APPLICATION PACKAGE AUTHORITY\ALL APPLICATION PACKAGES`}, Mask: GenericRead},
}

func TestWriteProblem(t *testing.T) {
	tests := []struct {
		name string
		sec  Security
		want string // "" = accepted; else a substring of the refusal
	}{
		{"program files file", Security{Owner: ti, DACL: programFiles}, ""},
		{"owned by the service account", Security{Owner: self, DACL: []ACE{{Trustee: self, Mask: GenericAll}}}, ""},
		{"owned by a user", Security{Owner: alice, DACL: programFiles}, `owned by HOST\alice (S-1-5-21-1-2-3-1002)`},
		{"null DACL", Security{Owner: admins, NullDACL: true}, "NULL DACL"},
		{"users may modify", Security{Owner: admins, DACL: append(programFiles[:3:3], ACE{Trustee: users, Mask: FileWriteData | Delete})},
			`grants write data/add file (WD), delete (D) to BUILTIN\Users`},
		{"a user may append", Security{Owner: admins, DACL: []ACE{{Trustee: alice, Mask: FileAppendData}}}, "append data"},
		{"a user may change permissions", Security{Owner: admins, DACL: []ACE{{Trustee: alice, Mask: WriteDAC}}}, "change permissions (WDAC)"},
		{"a user may take ownership", Security{Owner: admins, DACL: []ACE{{Trustee: alice, Mask: WriteOwner}}}, "take ownership (WO)"},
		{"generic write", Security{Owner: admins, DACL: []ACE{{Trustee: authn, Mask: GenericWrite}}}, "write (GW) to NT AUTHORITY"},
		{"a deny does not excuse another's grant", Security{Owner: admins, DACL: []ACE{{Trustee: users, Deny: true, Mask: GenericAll}, {Trustee: alice, Mask: GenericAll}}}, `HOST\alice`},
		{"a deny alone is fine", Security{Owner: admins, DACL: []ACE{{Trustee: users, Deny: true, Mask: GenericAll}}}, ""},
		{"inherit-only entries apply to children", Security{Owner: admins, DACL: []ACE{{Trustee: authn, Mask: GenericAll, InheritOnly: true}}}, ""},
		{"owner rights stands for the owner", Security{Owner: admins, DACL: []ACE{{Trustee: ownerRt, Mask: GenericAll}}}, ""},
		{"write attributes only", Security{Owner: admins, DACL: []ACE{{Trustee: users, Mask: FileWriteAttributes | FileReadData}}}, ""},
		// C:\ grants Authenticated Users "add subdirectory" on itself: it cannot replace an entry.
		{"drive root", Security{Dir: true, Owner: ti, DACL: []ACE{{Trustee: system, Mask: GenericAll}, {Trustee: admins, Mask: GenericAll},
			{Trustee: users, Mask: GenericRead}, {Trustee: authn, Mask: FileAppendData}, {Trustee: authn, Mask: 0x1301bf, InheritOnly: true}}}, ""},
		{"a directory others may add files to", Security{Dir: true, Owner: admins, DACL: []ACE{{Trustee: users, Mask: FileWriteData}}}, "add file (WD) to BUILTIN\\Users"},
		{"a directory others may empty", Security{Dir: true, Owner: admins, DACL: []ACE{{Trustee: users, Mask: FileDeleteChild}}}, "delete child (DC)"},
		{"a file's delete-child bit means nothing", Security{Owner: admins, DACL: []ACE{{Trustee: users, Mask: FileDeleteChild}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.sec.Path = `C:\rm\runner-manager.exe`
			err := tt.sec.WriteProblem(Trusted(selfSID))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("accepted, want a refusal containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("refusal %q does not contain %q", err, tt.want)
			case err != nil && !strings.HasPrefix(err.Error(), tt.sec.Path+" "):
				t.Fatalf("refusal %q does not start with the path", err)
			}
		})
	}
}

func TestReadProblem(t *testing.T) {
	tests := []struct {
		name      string
		sec       Security
		who       string
		wantBroad bool
	}{
		{"only trusted", Security{Owner: admins, DACL: []ACE{{Trustee: system, Mask: GenericAll}, {Trustee: self, Mask: GenericRead}}}, "", false},
		{"users may read", Security{Owner: admins, DACL: programFiles}, `BUILTIN\Users (S-1-5-32-545)`, true},
		{"everyone via read data", Security{Owner: admins, DACL: []ACE{{Trustee: Trustee{SID: SIDEveryone}, Mask: FileReadData}}}, SIDEveryone, true},
		{"a named account", Security{Owner: admins, DACL: []ACE{{Trustee: alice, Mask: GenericRead}}}, `HOST\alice (S-1-5-21-1-2-3-1002)`, false},
		{"denied and inherit-only entries", Security{Owner: admins, DACL: []ACE{{Trustee: users, Mask: GenericRead, Deny: true}, {Trustee: users, Mask: GenericRead, InheritOnly: true}}}, "", false},
		{"write without read", Security{Owner: admins, DACL: []ACE{{Trustee: users, Mask: FileWriteAttributes}}}, "", false},
		{"null DACL", Security{Owner: admins, NullDACL: true}, "every user (the file has no access control list)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			who, broad := tt.sec.ReadProblem(Trusted(selfSID))
			if who != tt.who || broad != tt.wantBroad {
				t.Fatalf("ReadProblem = %q, %v; want %q, %v", who, broad, tt.who, tt.wantBroad)
			}
		})
	}
}

func TestTrustedWithoutSelf(t *testing.T) {
	if got := Trusted(""); len(got) != 3 || got[""] {
		t.Fatalf("Trusted(\"\") = %v, want SYSTEM, Administrators and TrustedInstaller only", got)
	}
}

// TestFixQuotesForCmd: the icacls commands name the path as cmd.exe reads it, backslashes single.
func TestFixQuotesForCmd(t *testing.T) {
	got := Fix(`C:\Program Files\runner-manager\token`)
	if want := `icacls "C:\Program Files\runner-manager\token" /inheritance:r`; !strings.Contains(got, want) {
		t.Fatalf("Fix = %s; want it to contain %s", got, want)
	}
}
