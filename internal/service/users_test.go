package service

import (
	"context"
	"errors"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/livetest"
	"github.com/runner-manager/runner-manager/internal/runner"
	"github.com/runner-manager/runner-manager/internal/runner/runnerusertest"
)

// Install creates the per-slot runner users ahead of the daemon, with the runner package's own
// code; Uninstall keeps and reports them, or removes them when asked.
func TestInstallCreatesRunnerUsersAndUninstallRemovesThemWhenAsked(t *testing.T) {
	livetest.Root(t, "creating runner users")
	m, _, src := testHost(t, Systemd, "v1.2.3")
	users := &runner.SlotUsers{Prefix: runnerusertest.Prefix()}
	m.RunnerUsers, m.RunnerSlots = users, 2
	rec, err := m.Install(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{users.Name(0), users.Name(1)}
	if !slices.Equal(rec.RunnerUsersCreated, want) {
		t.Fatalf("install created %v, want %v", rec.RunnerUsersCreated, want)
	}
	for _, name := range want {
		if _, err := user.Lookup(name); err != nil {
			t.Fatalf("%s after install: %v", name, err)
		}
	}
	if rec, err := m.Install(t.Context(), src); err != nil || len(rec.RunnerUsersCreated) != 0 {
		t.Fatalf("reinstall = %v created, %v; want the users kept as they are", rec.RunnerUsersCreated, err)
	}
	done, err := m.Uninstall(t.Context())
	if err != nil || !slices.Equal(done.RunnerUsersKept, want) || len(done.RunnerUsersRemoved) != 0 {
		t.Fatalf("uninstall = %+v, %v; want the users kept and reported", done, err)
	}
	if _, err := m.Install(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	m.RemoveRunnerUsers = true
	done, err = m.Uninstall(t.Context())
	if err != nil || !slices.Equal(done.RunnerUsersRemoved, want) || len(done.RunnerUsersKept) != 0 {
		t.Fatalf("uninstall --remove-runner-users = %+v, %v; want both removed", done, err)
	}
	for _, name := range want {
		if _, err := user.Lookup(name); err == nil {
			t.Errorf("%s still exists after uninstall removed it", name)
		}
	}
}

type failingUsers struct{}

func (failingUsers) Provision(context.Context, int) ([]string, error) {
	return []string{"r0"}, errors.New("useradd: cannot lock /etc/passwd")
}
func (failingUsers) Existing() ([]string, error)          { return nil, nil }
func (failingUsers) Remove(context.Context, string) error { return nil }

// A host where the users cannot be made is told before anything is installed.
func TestInstallStopsWhenRunnerUsersCannotBeCreated(t *testing.T) {
	m, fm, src := testHost(t, Systemd, "v1.2.3")
	m.RunnerUsers, m.RunnerSlots = failingUsers{}, 2
	_, err := m.Install(t.Context(), src)
	if err == nil || !strings.Contains(err.Error(), "creating the runner users (created so far: [r0]): useradd: cannot lock") {
		t.Fatalf("Install = %v", err)
	}
	if exists(t, filepath.Join(m.Paths.Root, m.Paths.UnitFile(Systemd))) || len(fm.got()) != 0 {
		t.Fatalf("a unit was installed (calls %v) although the users could not be made", fm.got())
	}
}
