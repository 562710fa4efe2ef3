package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
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

// SlotUsers maps runner slots to their users, <Prefix><slot>, and creates a missing one with
// useradd (a system user with no login shell and its own home), as dockerd creates its
// userns-remap user. Creating accounts needs root; Ensure says what to do otherwise.
type SlotUsers struct {
	Prefix string
	mu     sync.Mutex // one useradd at a time: it locks /etc/passwd and fails when raced
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

// Existing lists the local users (in /etc/passwd, where useradd puts them) named <Prefix><slot>,
// in slot order: every slot user made so far, also of slots past today's max_runners.
func (s *SlotUsers) Existing() ([]string, error) {
	data, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return nil, fmt.Errorf("list runner users: %w", err)
	}
	slots := map[int]string{}
	for _, line := range strings.Split(string(data), "\n") {
		name, _, _ := strings.Cut(line, ":")
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
// killed, its files in /tmp, /var/tmp and /dev/shm removed), then userdel -r, which removes its home.
func (s *SlotUsers) Remove(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, err := lookupUser(name)
	if err != nil {
		return fmt.Errorf("remove runner user %s: %w", name, err)
	}
	if err := CleanUser(ctx, u); err != nil {
		return fmt.Errorf("remove runner user %s: %w", name, err)
	}
	if out, err := exec.CommandContext(ctx, "userdel", "-r", name).CombinedOutput(); err != nil {
		// userdel -r exits 12 when the home was already gone; the user is removed anyway.
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 12 {
			return fmt.Errorf("remove runner user %s: userdel -r %s: %w: %s", name, name, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// ensure returns slot's user and whether it created it.
func (s *SlotUsers) ensure(ctx context.Context, slot int) (User, bool, error) {
	name := s.Name(slot)
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, err := lookupUser(name); err == nil {
		return u, false, nil
	} else if !errors.As(err, new(user.UnknownUserError)) {
		return User{}, false, err
	}
	if os.Geteuid() != 0 {
		return User{}, false, fmt.Errorf("runner user %s does not exist and the daemon is not root, so it cannot create it: run `runner-manager service install` as root (it creates the users), create it yourself (useradd --system --user-group --create-home --shell /usr/sbin/nologin %s), or set daemon.runner_user = \"daemon\"", name, name)
	}
	args := []string{"--system", "--user-group", "--create-home", "--home-dir", filepath.Join("/home", name),
		"--shell", noLoginShell(), "--comment", "runner-manager runner slot " + strconv.Itoa(slot), name}
	if out, err := exec.CommandContext(ctx, "useradd", args...).CombinedOutput(); err != nil {
		return User{}, false, fmt.Errorf("create runner user %s: useradd %s: %w: %s (create the user yourself, or set daemon.runner_user = \"daemon\")", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	u, err := lookupUser(name)
	if err != nil {
		return User{}, false, err
	}
	// useradd leaves HOME_MODE unset on Debian (homes 0755): other slots and local users would
	// read what a job keeps there. CleanUser fixes the home of a user made before, at its next use.
	if err := os.Chmod(u.Home, 0o700); err != nil {
		return User{}, false, fmt.Errorf("create runner user %s: make its home %s 0700: %w", name, u.Home, err)
	}
	return u, true, nil
}

func lookupUser(name string) (User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return User{}, err
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return User{}, fmt.Errorf("runner user %s: %w", name, err)
	}
	if uid == 0 || gid == 0 {
		return User{}, fmt.Errorf("runner user %s has uid %d and gid %d: a runner user must not be root; give it its own uid and gid", name, uid, gid)
	}
	return User{Name: name, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}, nil
}

func noLoginShell() string {
	for _, p := range []string{"/usr/sbin/nologin", "/sbin/nologin"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "/bin/false"
}

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
