//go:build unix

package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

// fakeDscl is dscl on a Mac's local node as far as SlotUsers uses it, answering in dscl's formats
// as its man page and a Mac show them (records in -plist form with dsAttrTypeStandard: keys,
// `-list PATH ATTR` as name and value columns, a missing record as DS Error -14136 with exit
// status 56). It records every command line, and refuses one it does not know, so a changed
// command fails the tests instead of passing unseen.
type fakeDscl struct {
	recs  map[string]dsRecord // "/Users/x", "/Groups/x"
	calls []string
	fail  string // a command line that fails (exit 1), to cut a create short
}

func newFakeDscl() *fakeDscl { return &fakeDscl{recs: map[string]dsRecord{}} }

func (f *fakeDscl) add(path string, attrs ...string) {
	r := dsRecord{}
	for i := 0; i+1 < len(attrs); i += 2 {
		r[attrs[i]] = append(r[attrs[i]], attrs[i+1])
	}
	f.recs[path] = r
}

var errExit56 = errors.New("exit status 56")

func (f *fakeDscl) run(_ context.Context, args ...string) ([]byte, error) {
	line := strings.Join(args, " ")
	f.calls = append(f.calls, line)
	if line == f.fail {
		return []byte("<main> attribute status: eDSPermissionError\n<dscl_cmd> DS Error: -14120 (eDSPermissionError)"), errors.New("exit status 40")
	}
	notFound := []byte("<dscl_cmd> DS Error: -14136 (eDSRecordNotFound)")
	switch {
	case len(args) == 4 && args[0] == "-plist" && args[1] == "." && args[2] == "-read":
		r, ok := f.recs[args[3]]
		if !ok {
			return notFound, errExit56
		}
		var b strings.Builder
		b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n<dict>\n")
		for _, k := range sortedKeys(r) {
			fmt.Fprintf(&b, "\t<key>dsAttrTypeStandard:%s</key>\n\t<array>\n", k)
			for _, v := range r[k] {
				fmt.Fprintf(&b, "\t\t<string>%s</string>\n", xmlEscape(v))
			}
			b.WriteString("\t</array>\n")
		}
		b.WriteString("</dict>\n</plist>\n")
		return []byte(b.String()), nil
	case len(args) >= 3 && args[0] == "." && args[1] == "-list" && len(args) <= 4:
		var b strings.Builder
		for _, p := range sortedKeys(f.recs) {
			name, ok := strings.CutPrefix(p, args[2]+"/")
			if !ok {
				continue
			}
			if len(args) == 3 {
				b.WriteString(name + "\n")
			} else if v := f.recs[p][args[3]]; len(v) > 0 {
				fmt.Fprintf(&b, "%-24s %s\n", name, strings.Join(v, " "))
			}
		}
		return []byte(b.String()), nil
	case len(args) == 5 && args[0] == "." && args[1] == "-create":
		r := f.recs[args[2]]
		if r == nil {
			r = dsRecord{}
			f.recs[args[2]] = r
		}
		r[args[3]] = []string{args[4]}
		return nil, nil
	case len(args) == 3 && args[0] == "." && args[1] == "-delete":
		if _, ok := f.recs[args[2]]; !ok {
			return notFound, errExit56
		}
		delete(f.recs, args[2])
		return nil, nil
	}
	return []byte("dscl: Invalid Path"), fmt.Errorf("the fake dscl does not know %q", line)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// dsclUsers is SlotUsers on a fake Mac: dscl answered by f, homes in a temp dir. It needs root:
// the homes are given to the made-up uids.
func dsclUsers(t *testing.T, f *fakeDscl) (*SlotUsers, string) {
	t.Helper()
	livetest.Root(t, "giving homes to made-up uids")
	homes := filepath.Join(t.TempDir(), "users")
	return &SlotUsers{Prefix: "rm-r", db: &dscl{run: f.run, homes: homes, first: 3000, last: 3003}}, homes
}

// Ensure on a Mac: the lowest id free as a uid and as a gid (3000 is a user's, 3001 a group's),
// the group first, then the hidden user with no shell and its home; RealName before anything,
// so a create cut short is recognisable. A second Ensure only reads.
func TestDsclEnsureCreatesAHiddenUserOnce(t *testing.T) {
	f := newFakeDscl()
	f.add("/Users/someone", "UniqueID", "3000", "PrimaryGroupID", "20", "RealName", "Some One", "NFSHomeDirectory", "/Users/someone")
	f.add("/Groups/devs", "PrimaryGroupID", "3001", "RealName", "Developers")
	s, homes := dsclUsers(t, f)
	u, err := s.Ensure(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(homes, "rm-r0")
	if want := (User{Name: "rm-r0", UID: 3002, GID: 3002, Home: home}); u != want {
		t.Fatalf("Ensure(0) = %+v, want %+v", u, want)
	}
	want := []string{
		"-plist . -read /Users/rm-r0",
		"-plist . -read /Users/rm-r0",
		"-plist . -read /Groups/rm-r0",
		". -list /Users UniqueID",
		". -list /Groups PrimaryGroupID",
		". -create /Groups/rm-r0 RealName runner-manager runner slot 0",
		". -create /Groups/rm-r0 PrimaryGroupID 3002",
		". -create /Groups/rm-r0 Password *",
		". -create /Users/rm-r0 RealName runner-manager runner slot 0",
		". -create /Users/rm-r0 NFSHomeDirectory " + home,
		". -create /Users/rm-r0 UniqueID 3002",
		". -create /Users/rm-r0 PrimaryGroupID 3002",
		". -create /Users/rm-r0 UserShell /usr/bin/false",
		". -create /Users/rm-r0 Password *",
		". -create /Users/rm-r0 IsHidden 1",
		"-plist . -read /Users/rm-r0",
	}
	if !slices.Equal(f.calls, want) {
		t.Fatalf("dscl calls:\n%s\nwant:\n%s", strings.Join(f.calls, "\n"), strings.Join(want, "\n"))
	}
	fi, err := os.Stat(home)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 3002 || st.Gid != 3002 || st.Mode&0o7777 != 0o700 {
		t.Errorf("home %s: uid %d gid %d mode %o, want 3002 3002 0700", home, st.Uid, st.Gid, st.Mode&0o7777)
	}
	f.calls = nil
	again, err := s.Ensure(t.Context(), 0)
	if err != nil || again != u {
		t.Fatalf("second Ensure = %+v, %v; want %+v", again, err, u)
	}
	if want := []string{"-plist . -read /Users/rm-r0"}; !slices.Equal(f.calls, want) {
		t.Fatalf("second Ensure ran %q, want only %q", f.calls, want)
	}
	other, err := s.Ensure(t.Context(), 1)
	if err != nil || other.UID != 3003 {
		t.Fatalf("Ensure(1) = %+v, %v; want uid 3003", other, err)
	}
	if _, err := s.Ensure(t.Context(), 2); err == nil || !strings.Contains(err.Error(), "every id from 3000 to 3003 is taken") {
		t.Fatalf("Ensure(2) with the range used up = %v", err)
	}
}

// A create cut short (here dscl fails at UniqueID) leaves a record that is recognisably ours; the
// next Ensure completes it rather than refusing it as a stranger, and keeps the id it had.
func TestDsclEnsureCompletesAnInterruptedCreate(t *testing.T) {
	f := newFakeDscl()
	s, _ := dsclUsers(t, f)
	f.fail = ". -create /Users/rm-r0 UniqueID 3000"
	if _, err := s.Ensure(t.Context(), 0); err == nil || !strings.Contains(err.Error(), "eDSPermissionError") {
		t.Fatalf("Ensure with a failing dscl = %v", err)
	}
	f.fail = ""
	u, err := s.Ensure(t.Context(), 0)
	if err != nil || u.UID != 3000 || u.GID != 3000 {
		t.Fatalf("Ensure after the interruption = %+v, %v; want uid and gid 3000", u, err)
	}
}

// A user or group of a slot's name that runner-manager did not make is refused, by Ensure and by
// Remove, and nothing is created, changed or deleted.
func TestDsclRefusesAUserThatIsNotOurs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attrs map[string][]string
	}{
		{"a person", map[string][]string{"/Users/rm-r0": {"RealName", "Ramona M", "UniqueID", "501", "PrimaryGroupID", "20", "NFSHomeDirectory", "/Users/rm-r0", "IsHidden", "1"}}},
		{"a slot's comment, another home", map[string][]string{"/Users/rm-r0": {"RealName", "runner-manager runner slot 0", "UniqueID", "600", "PrimaryGroupID", "600", "NFSHomeDirectory", "/var/root", "IsHidden", "1"}}},
		{"a group of the name", map[string][]string{"/Groups/rm-r0": {"RealName", "Release managers", "PrimaryGroupID", "700"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeDscl()
			for p, a := range tc.attrs {
				f.add(p, a...)
			}
			s, _ := dsclUsers(t, f)
			if _, err := s.Ensure(t.Context(), 0); err == nil || !strings.Contains(err.Error(), "runner-manager did not make it") {
				t.Fatalf("Ensure = %v, want a refusal", err)
			}
			if _, ok := tc.attrs["/Users/rm-r0"]; ok {
				if err := s.Remove(t.Context(), "rm-r0"); err == nil || !strings.Contains(err.Error(), "runner-manager did not make it") {
					t.Fatalf("Remove = %v, want a refusal", err)
				}
			}
			for _, c := range f.calls {
				if strings.Contains(c, "-create") || strings.Contains(c, "-delete") {
					t.Errorf("a refused user was changed: dscl %s", c)
				}
			}
		})
	}
}

// Existing lists the slot users in slot order; Remove deletes the user, its group and its home,
// and a second Remove finds nothing to remove.
func TestDsclExistingAndRemove(t *testing.T) {
	f := newFakeDscl()
	f.add("/Users/rm-rx", "RealName", "not a slot")
	f.add("/Users/rm-r", "RealName", "not a slot")
	s, homes := dsclUsers(t, f)
	for _, slot := range []int{10, 2} {
		if _, err := s.Ensure(t.Context(), slot); err != nil {
			t.Fatal(err)
		}
	}
	names, err := s.Existing()
	if err != nil || !slices.Equal(names, []string{"rm-r2", "rm-r10"}) {
		t.Fatalf("Existing = %v, %v; want rm-r2, rm-r10", names, err)
	}
	u, err := s.accounts().lookup(t.Context(), "rm-r2")
	if err != nil {
		t.Fatal(err)
	}
	f.calls = nil
	if err := s.accounts().remove(t.Context(), u); err != nil { // Remove without CleanUser, which kills for real
		t.Fatal(err)
	}
	if want := []string{". -delete /Users/rm-r2", ". -delete /Groups/rm-r2"}; !slices.Equal(f.calls, want) {
		t.Fatalf("remove ran %q, want %q", f.calls, want)
	}
	if _, err := os.Stat(filepath.Join(homes, "rm-r2")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("home after remove: %v, want it gone", err)
	}
	if _, err := s.accounts().lookup(t.Context(), "rm-r2"); !errors.As(err, new(user.UnknownUserError)) {
		t.Fatalf("lookup after remove = %v, want an unknown user", err)
	}
	if err := s.accounts().remove(t.Context(), u); err != nil {
		t.Fatalf("second remove = %v, want nothing to do", err)
	}
}

func FuzzParseDsPlist(f *testing.F) {
	fake := newFakeDscl()
	fake.add("/Users/a", "RealName", "x <&> y", "UniqueID", "3000", "UniqueID", "3001")
	out, _ := fake.run(context.Background(), "-plist", ".", "-read", "/Users/a")
	f.Add(out)
	f.Add([]byte("<plist><dict><key>k</key><array><string>v"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := parseDsPlist(data)
		if err == nil && rec == nil {
			t.Fatal("no error and no record")
		}
	})
}

// The fake's own answer parses back to what it holds, escapes and several values included.
func TestParseDsPlist(t *testing.T) {
	fake := newFakeDscl()
	fake.add("/Users/a", "RealName", "x <&> y", "UniqueID", "3000", "UniqueID", "3001")
	out, _ := fake.run(context.Background(), "-plist", ".", "-read", "/Users/a")
	rec, err := parseDsPlist(out)
	if err != nil {
		t.Fatal(err)
	}
	if rec.first("RealName") != "x <&> y" || !slices.Equal(rec["UniqueID"], []string{"3000", "3001"}) {
		t.Fatalf("parsed %v", rec)
	}
}
