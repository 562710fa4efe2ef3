package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// dscl is macOS's accountDB: Directory Service's command line on the local node ("."). dscl
// rather than sysadminctl: sysadminctl makes full login users (a home in /Users, a secure token,
// a prompt for an admin's password on recent releases), cannot make a group of the same name or a
// hidden user, and reports on stderr in prose, while dscl sets each attribute explicitly, one
// idempotent -create at a time, and has done so since Mac OS X 10.5. The command lines are built
// here and run through run, so TestDscl* check them on Linux against a fake dscl; users_darwin.go
// runs the real one. Never run on a Mac by this project's tests (docs/operations.md, macOS).
type dscl struct {
	run   func(ctx context.Context, args ...string) ([]byte, error) // dscl's combined output
	homes string                                                    // the homes are made in here
	// first and last bound the uids (and gids) given to slot users: above the ids below 500 that
	// macOS reserves for its own accounts (an update adds some) and above where the accounts of
	// people, counted from 501, reach on a build Mac; the lowest id free as a uid and as a gid is
	// taken.
	first, last uint32
}

// Slot users' ids on macOS (dscl.first, dscl.last) and their shell.
const (
	dsclFirstID  = 3000
	dsclLastID   = 3999
	dsclNoLogin  = "/usr/bin/false"
	dsclNotFound = "eDSRecordNotFound" // dscl's answer (DS Error: -14136) for a missing record
)

func (d *dscl) home(name string) string { return filepath.Join(d.homes, name) }

func (d *dscl) howToCreate(name string) string {
	return "dscl . -create /Users/" + name + " with UniqueID, PrimaryGroupID, UserShell " + dsclNoLogin + ", NFSHomeDirectory " + d.home(name) + " and IsHidden 1 (docs/operations.md, macOS)"
}

// lookup reads /Users/name. A user runner-manager did not make (its RealName is not a slot's, or
// its home is elsewhere) is refused: its files and processes are someone else's. One whose
// creation was interrupted (ours, but without its ids yet) is reported missing, so Ensure
// completes it.
func (d *dscl) lookup(ctx context.Context, name string) (User, error) {
	rec, ok, err := d.read(ctx, "/Users/"+name)
	if err != nil {
		return User{}, err
	}
	if !ok {
		return User{}, user.UnknownUserError(name)
	}
	if err := d.ours(rec, "user", name); err != nil {
		return User{}, err
	}
	uid, err1 := strconv.ParseUint(rec.first("UniqueID"), 10, 32)
	gid, err2 := strconv.ParseUint(rec.first("PrimaryGroupID"), 10, 32)
	if err1 != nil || err2 != nil || rec.first("NFSHomeDirectory") == "" || rec.first("IsHidden") != "1" {
		return User{}, user.UnknownUserError(name)
	}
	return checkIDs(User{Name: name, UID: uint32(uid), GID: uint32(gid), Home: rec.first("NFSHomeDirectory")})
}

// ours refuses a record runner-manager did not make. An empty home is one being created.
func (d *dscl) ours(rec dsRecord, kind, name string) error {
	real, home := rec.first("RealName"), rec.first("NFSHomeDirectory")
	if strings.HasPrefix(real, slotCommentPrefix) && (kind == "group" || home == "" || home == d.home(name)) {
		return nil
	}
	return fmt.Errorf("a %s named %s exists but runner-manager did not make it (RealName %q, home %q, not a runner slot's under %s): choose another daemon.runner_user_prefix, or delete it if it is a leftover (dscl . -delete /Users/%s)", kind, name, real, home, d.homes, name)
}

// create makes name's group and user, hidden, with no login shell, and its home (0700). RealName
// goes first, so that a create cut short leaves a record lookup recognises and completes.
func (d *dscl) create(ctx context.Context, name string, slot int) error {
	rec, _, err := d.read(ctx, "/Users/"+name)
	if err != nil {
		return err
	}
	grp, _, err := d.read(ctx, "/Groups/"+name)
	if err != nil {
		return err
	}
	if rec != nil {
		if err := d.ours(rec, "user", name); err != nil {
			return err
		}
	}
	if grp != nil {
		if err := d.ours(grp, "group", name); err != nil {
			return err
		}
	}
	uid, gid := rec.first("UniqueID"), grp.first("PrimaryGroupID")
	if uid == "" || gid == "" {
		used, err := d.usedIDs(ctx, name)
		if err != nil {
			return err
		}
		// The id a create cut short already gave the user or the group goes to the other too.
		switch {
		case uid == "" && gid != "" && !used[gid]:
			uid = gid
		case gid == "" && uid != "" && !used[uid]:
			gid = uid
		default:
			id, err := d.freeID(used)
			if err != nil {
				return err
			}
			uid, gid = or(uid, id), or(gid, id)
		}
	}
	comment := slotComment(slot)
	steps := [][]string{
		{"/Groups/" + name, "RealName", comment},
		{"/Groups/" + name, "PrimaryGroupID", gid},
		{"/Groups/" + name, "Password", "*"},
		{"/Users/" + name, "RealName", comment},
		{"/Users/" + name, "NFSHomeDirectory", d.home(name)},
		{"/Users/" + name, "UniqueID", uid},
		{"/Users/" + name, "PrimaryGroupID", gid},
		{"/Users/" + name, "UserShell", dsclNoLogin},
		{"/Users/" + name, "Password", "*"},
		{"/Users/" + name, "IsHidden", "1"},
	}
	for _, s := range steps {
		if err := d.do(ctx, append([]string{".", "-create"}, s...)...); err != nil {
			return err
		}
	}
	u, _ := strconv.Atoi(uid)
	g, _ := strconv.Atoi(gid)
	return makeHome(d.homes, d.home(name), u, g)
}

// makeHome makes home, in homes (0711: a slot reaches its own home only), owned by uid and gid
// and 0700. A home that exists is kept but must be a directory, not a link a job planted.
func makeHome(homes, home string, uid, gid int) error {
	if err := os.MkdirAll(homes, 0o711); err != nil {
		return fmt.Errorf("make the runner users' homes directory %s: %w", homes, err)
	}
	if err := os.Mkdir(home, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make home %s: %w", home, err)
	}
	if fi, err := os.Lstat(home); err != nil || !fi.IsDir() {
		return fmt.Errorf("home %s is not a directory (%v): remove it and retry", home, err)
	}
	if err := os.Lchown(home, uid, gid); err != nil {
		return fmt.Errorf("give home %s to its user: %w", home, err)
	}
	return os.Chmod(home, 0o700)
}

func or(s, alt string) string {
	if s != "" {
		return s
	}
	return alt
}

// usedIDs are the users' UniqueIDs and the groups' PrimaryGroupIDs, but name's own.
func (d *dscl) usedIDs(ctx context.Context, name string) (map[string]bool, error) {
	used := map[string]bool{}
	for _, q := range [][]string{{".", "-list", "/Users", "UniqueID"}, {".", "-list", "/Groups", "PrimaryGroupID"}} {
		out, err := d.run(ctx, q...)
		if err != nil {
			return nil, fmt.Errorf("dscl %s: %w: %s", strings.Join(q, " "), err, strings.TrimSpace(string(out)))
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] != name {
				for _, id := range f[1:] { // a record may carry several values
					used[id] = true
				}
			}
		}
	}
	return used, nil
}

// freeID is the lowest id in [first, last] that is not used, so a slot's user and its group
// share it.
func (d *dscl) freeID(used map[string]bool) (string, error) {
	for id := d.first; id <= d.last; id++ {
		if s := strconv.FormatUint(uint64(id), 10); !used[s] {
			return s, nil
		}
	}
	return "", fmt.Errorf("every id from %d to %d is taken by a user or a group: remove unused runner users (runner-manager service uninstall --remove-runner-users) or lower daemon.max_runners", d.first, d.last)
}

func (d *dscl) list(ctx context.Context) ([]string, error) {
	out, err := d.run(ctx, ".", "-list", "/Users")
	if err != nil {
		return nil, fmt.Errorf("dscl . -list /Users: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return strings.Fields(string(out)), nil
}

// remove deletes u's user and group records, then its home (only one below homes: a record
// someone edited to point elsewhere is not followed there). A record already gone is fine.
func (d *dscl) remove(ctx context.Context, u User) error {
	for _, path := range []string{"/Users/" + u.Name, "/Groups/" + u.Name} {
		if err := d.do(ctx, ".", "-delete", path); err != nil && !errors.Is(err, errDsclNotFound) {
			return err
		}
	}
	if u.Home != d.home(u.Name) {
		return nil
	}
	if err := os.RemoveAll(u.Home); err != nil {
		return fmt.Errorf("remove home %s: %w", u.Home, err)
	}
	return nil
}

var errDsclNotFound = errors.New("no such record")

// do runs one dscl command that prints nothing when it works.
func (d *dscl) do(ctx context.Context, args ...string) error {
	out, err := d.run(ctx, args...)
	if err == nil {
		return nil
	}
	if bytes.Contains(out, []byte(dsclNotFound)) {
		err = fmt.Errorf("%w: %w", errDsclNotFound, err)
	}
	return fmt.Errorf("dscl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
}

// dsRecord is one record's attributes, without dscl's "dsAttrTypeStandard:" prefix.
type dsRecord map[string][]string

func (r dsRecord) first(attr string) string {
	if v := r[attr]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// read reads the record at path with `dscl -plist . -read`; ok is false when there is none.
func (d *dscl) read(ctx context.Context, path string) (dsRecord, bool, error) {
	out, err := d.run(ctx, "-plist", ".", "-read", path)
	if err != nil {
		if bytes.Contains(out, []byte(dsclNotFound)) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("dscl -plist . -read %s: %w: %s", path, err, strings.TrimSpace(string(out)))
	}
	rec, err := parseDsPlist(out)
	if err != nil {
		return nil, false, fmt.Errorf("dscl -plist . -read %s: %w", path, err)
	}
	return rec, true, nil
}

// parseDsPlist reads dscl's -plist answer: one dict whose keys are attribute names and whose
// values are arrays of strings. FuzzParseDsPlist.
func parseDsPlist(data []byte) (dsRecord, error) {
	rec := dsRecord{}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = false
	var key string
	var inKey, inString bool
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return rec, nil
		}
		if err != nil {
			return nil, fmt.Errorf("not a property list: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			inKey, inString = t.Name.Local == "key", t.Name.Local == "string"
		case xml.EndElement:
			inKey, inString = false, false
		case xml.CharData:
			switch {
			case inKey:
				key = strings.TrimPrefix(string(t), "dsAttrTypeStandard:")
			case inString && key != "":
				rec[key] = append(rec[key], string(t))
			}
		}
	}
}
