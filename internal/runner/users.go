package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// User is the unprivileged account one runner slot runs as (docs/security.md).
type User struct {
	Name     string
	UID, GID uint32
	Home     string
}

// SlotUsers maps runner slots to their users, <Prefix><slot>, and creates a missing one through
// the OS's account tool (useradd on Linux, dscl on macOS: accountDB): an unprivileged user with no
// login shell, its own group and its own home, as dockerd creates its userns-remap user.
// Creating accounts needs root; Ensure says what to do otherwise.
type SlotUsers struct {
	Prefix string
	mu     sync.Mutex // one account change at a time: useradd locks /etc/passwd and fails when raced
	db     accountDB  // nil: the OS's (osAccounts); tests give dscl a fake
}

// accountDB is the OS's user database as SlotUsers uses it; each OS file gives one (osAccounts).
type accountDB interface {
	// lookup returns name's user; a user.UnknownUserError when there is none, another error
	// when it cannot be read or must not be used (root's ids; on macOS, one runner-manager did
	// not make).
	lookup(ctx context.Context, name string) (User, error)
	// create makes the user of slot, named name, with its group and its home (0700).
	create(ctx context.Context, name string, slot int) error
	// list names every local user.
	list(ctx context.Context) ([]string, error)
	// remove deletes u, its group and its home; its processes are already gone.
	remove(ctx context.Context, u User) error
	// howToCreate is the command an operator runs to make name by hand.
	howToCreate(name string) string
}

func (s *SlotUsers) accounts() accountDB {
	if s.db != nil {
		return s.db
	}
	return osAccounts()
}

// Name is the user of slot.
func (s *SlotUsers) Name(slot int) string { return s.Prefix + strconv.Itoa(slot) }

// Ensure returns slot's user, creating it when missing.
func (s *SlotUsers) Ensure(ctx context.Context, slot int) (User, error) {
	u, _, err := s.ensure(ctx, slot)
	return u, err
}

// Provision makes sure the users of slots 0 to n-1 exist, as Ensure does for one (`service
// install` creates them ahead of time), and returns the names it created.
func (s *SlotUsers) Provision(ctx context.Context, n int) ([]string, error) {
	var created []string
	for slot := range n {
		u, made, err := s.ensure(ctx, slot)
		if err != nil {
			return created, err
		}
		if made {
			created = append(created, u.Name)
		}
	}
	return created, nil
}

// Existing lists the local users named <Prefix><slot>, in slot order: every slot user made so
// far, also of slots past today's max_runners.
func (s *SlotUsers) Existing() ([]string, error) {
	all, err := s.accounts().list(context.Background())
	if err != nil {
		return nil, fmt.Errorf("list runner users: %w", err)
	}
	slots := map[int]string{}
	for _, name := range all {
		digits, ok := strings.CutPrefix(name, s.Prefix)
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
			continue
		}
		if slot, err := strconv.Atoi(digits); err == nil && s.Name(slot) == name {
			slots[slot] = name
		}
	}
	keys := make([]int, 0, len(slots))
	for k := range slots {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = slots[k]
	}
	return names, nil
}

// Remove deletes the slot user name (one Existing lists): slot hygiene first (its processes
// killed, its files in the shared scratch directories removed), then the user, its group and
// its home.
func (s *SlotUsers) Remove(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	db := s.accounts()
	u, err := db.lookup(ctx, name)
	if err != nil {
		return fmt.Errorf("remove runner user %s: %w", name, err)
	}
	if err := CleanUser(ctx, u); err != nil {
		return fmt.Errorf("remove runner user %s: %w", name, err)
	}
	if err := db.remove(ctx, u); err != nil {
		return fmt.Errorf("remove runner user %s: %w", name, err)
	}
	return nil
}

// ensure returns slot's user and whether it created it.
func (s *SlotUsers) ensure(ctx context.Context, slot int) (User, bool, error) {
	name := s.Name(slot)
	s.mu.Lock()
	defer s.mu.Unlock()
	db := s.accounts()
	if u, err := db.lookup(ctx, name); err == nil {
		return u, false, nil
	} else if !errors.As(err, new(user.UnknownUserError)) {
		return User{}, false, err
	}
	if os.Geteuid() != 0 {
		return User{}, false, fmt.Errorf("runner user %s does not exist and the daemon is not root, so it cannot create it: run `runner-manager service install` as root (it creates the users), create it yourself (%s), or set daemon.runner_user = \"daemon\"", name, db.howToCreate(name))
	}
	if err := db.create(ctx, name, slot); err != nil {
		return User{}, false, fmt.Errorf("create runner user %s: %w (create the user yourself, or set daemon.runner_user = \"daemon\")", name, err)
	}
	u, err := db.lookup(ctx, name)
	if err != nil {
		return User{}, false, err
	}
	return u, true, nil
}

// checkIDs refuses root's ids for a runner user.
func checkIDs(u User) (User, error) {
	if u.UID == 0 || u.GID == 0 {
		return User{}, fmt.Errorf("runner user %s has uid %d and gid %d: a runner user must not be root; give it its own uid and gid", u.Name, u.UID, u.GID)
	}
	return u, nil
}

// slotComment is the account's comment (GECOS on Linux, RealName on macOS): what marks a user
// as a runner-manager slot user for the packages' purge and for macOS's refusal of a stranger.
func slotComment(slot int) string { return slotCommentPrefix + strconv.Itoa(slot) }

const slotCommentPrefix = "runner-manager runner slot "

// CleanUser is slot hygiene, run before u runs the next job: it kills every process of u's uid,
// then removes what a job can leave behind besides processes (scrubUser: files in u's home and
// in the shared scratch directories, kernel keyrings, SysV IPC objects, POSIX message queues)
// and makes u's home 0700 again, so nothing a job left (a planted ~/.gitconfig, a background
// process, a key in its keyring) reaches the next job. Files are removed by directory
// descriptor, so a link a job planted or swapped in is removed as a link and never followed.
func CleanUser(ctx context.Context, u User) error {
	if u.UID == 0 || uint32(os.Geteuid()) == u.UID {
		return fmt.Errorf("clean runner user %s: uid %d is root or the daemon's own", u.Name, u.UID)
	}
	if err := killUID(ctx, u.UID, u.GID); err != nil {
		return fmt.Errorf("clean runner user %s: %w", u.Name, err)
	}
	if err := scrubUser(u); err != nil {
		return fmt.Errorf("clean runner user %s: %w", u.Name, err)
	}
	return nil
}
