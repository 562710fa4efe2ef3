//go:build linux

package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// useradd is Linux's accountDB: useradd and userdel, and /etc/passwd (where useradd puts users).
type useradd struct{}

func osAccounts() accountDB { return useradd{} }

func (useradd) lookup(_ context.Context, name string) (User, error) { return lookupUser(name) }

func (useradd) howToCreate(name string) string {
	return "useradd --system --user-group --create-home --shell /usr/sbin/nologin " + name
}

// create runs useradd: a system user with its own group, no login shell and a home in /home.
func (useradd) create(ctx context.Context, name string, slot int) error {
	home := filepath.Join("/home", name)
	args := []string{"--system", "--user-group", "--create-home", "--home-dir", home,
		"--shell", noLoginShell(), "--comment", slotComment(slot), name}
	if out, err := exec.CommandContext(ctx, "useradd", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("useradd %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	// useradd leaves HOME_MODE unset on Debian (homes 0755): other slots and local users would
	// read what a job keeps there. CleanUser fixes the home of a user made before, at its next use.
	if err := os.Chmod(home, 0o700); err != nil {
		return fmt.Errorf("make its home %s 0700: %w", home, err)
	}
	return nil
}

func (useradd) list(context.Context) ([]string, error) {
	data, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(string(data), "\n") {
		if name, _, _ := strings.Cut(line, ":"); name != "" {
			names = append(names, name)
		}
	}
	return names, nil
}

// remove runs userdel -r, which removes the home too.
func (useradd) remove(ctx context.Context, u User) error {
	if out, err := exec.CommandContext(ctx, "userdel", "-r", u.Name).CombinedOutput(); err != nil {
		// userdel -r exits 12 when the home was already gone; the user is removed anyway.
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 12 {
			return fmt.Errorf("userdel -r %s: %w: %s", u.Name, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
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
	return checkIDs(User{Name: name, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir})
}

func noLoginShell() string {
	for _, p := range []string{"/usr/sbin/nologin", "/sbin/nologin"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "/bin/false"
}

// pidsOf lists the live (not zombie) processes with uid among their real, effective and saved uids.
func pidsOf(uid uint32) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	want := []byte(strconv.FormatUint(uint64(uid), 10))
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue // gone meanwhile
		}
		var zombie, match bool
		for _, line := range bytes.Split(data, []byte("\n")) {
			switch {
			case bytes.HasPrefix(line, []byte("State:")):
				zombie = bytes.Contains(line, []byte("(zombie)"))
			case bytes.HasPrefix(line, []byte("Uid:")):
				f := bytes.Fields(line[4:])
				for i := 0; i < len(f) && i < 3; i++ {
					match = match || bytes.Equal(f[i], want)
				}
			}
		}
		if match && !zombie {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
