package selfupdate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// windowsFiles models what Windows does to a running executable: it may be renamed (and stays
// running under its new name), but neither replaced by a rename over it nor removed. A held file
// is one another program opened without share-delete: not even a rename is allowed.
type windowsFiles struct{ running, held map[string]bool }

var errAccessDenied = errors.New("Access is denied.")

func runningAs(path string) *windowsFiles { return &windowsFiles{running: map[string]bool{path: true}} }

func (w *windowsFiles) Rename(from, to string) error {
	if w.running[to] || w.held[from] {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: errAccessDenied}
	}
	if err := os.Rename(from, to); err != nil {
		return err
	}
	if w.running[from] {
		delete(w.running, from)
		w.running[to] = true
	}
	return nil
}

func (w *windowsFiles) Remove(path string) error {
	if w.running[path] {
		return &os.PathError{Op: "remove", Path: path, Err: errAccessDenied}
	}
	return os.Remove(path)
}

func (w *windowsFiles) Link(from, to string) error { return os.Link(from, to) }

// TestInstallOnWindows: the running binary is renamed aside to .old (where it keeps running)
// and the new one takes its name; a failed install renames it back. Without the rename aside
// (the unix swap under Windows' rules) the rename over the running file is refused.
func TestInstallOnWindows(t *testing.T) {
	for _, tt := range []struct{ name, goos, source, errContains string }{ // errContains "" = installs
		{"installs", "windows", "v1.2.4", ""},
		{"installed copy does not run", "windows", "fail", "put back"},
		{"source changed during the drain", "windows", "v1.2.5", "reports 1.2.5"},
		{"the unix swap is refused there", "linux", "v1.2.4", "Access is denied"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, src := installFixture(t, tt.source)
			win := runningAs(in.Target)
			in.swapper = swapper{fs: win, goos: tt.goos}
			// Leftovers of an earlier upgrade and rollback, no longer running.
			for _, p := range []string{in.Target + OldSuffix, in.Target + RejectedSuffix} {
				if err := os.WriteFile(p, []byte("stale"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			err := in.Install(t.Context(), Candidate{Path: src, Version: "1.2.4"})
			if _, serr := os.Stat(in.Target + RejectedSuffix); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("the leftover %s%s is still there (err=%v)", in.Target, RejectedSuffix, serr)
			}
			if tt.errContains == "" {
				if err != nil {
					t.Fatal(err)
				}
				runsVersion(t, in.Target, "1.2.4")
				runsVersion(t, in.Target+OldSuffix, "1.2.3")
				if !win.running[in.Target+OldSuffix] {
					t.Errorf("the running binary is not the one kept as .old: running %v", win.running)
				}
				assertNoTempFiles(t, filepath.Dir(in.Target))
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.errContains) {
				t.Fatalf("Install = %v, want an error containing %q", err, tt.errContains)
			}
			runsVersion(t, in.Target, "1.2.3")
			if !win.running[in.Target] {
				t.Errorf("the running binary is not back at %s: running %v", in.Target, win.running)
			}
			if _, err := os.Stat(in.Target + OldSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s%s left after a failed install (err=%v)", in.Target, OldSuffix, err)
			}
			assertNoTempFiles(t, filepath.Dir(in.Target))
		})
	}
}

// TestGuardRollsBackOnWindows: the crash-looping binary is running when the guard rolls back, so
// it is renamed to .rejected and .old takes its name; the next start removes .rejected.
func TestGuardRollsBackOnWindows(t *testing.T) {
	for _, goos := range []string{"windows", "linux"} {
		t.Run(goos, func(t *testing.T) {
			stateDir, bin := upgradedHost(t, "v1.2.3")
			win := runningAs(bin)
			g := newGuard(stateDir, bin, "1.2.4", newFakeClock())
			g.swapper = swapper{fs: win, goos: goos}
			for range DefaultLimit {
				mustStart(t, g)
			}
			rolled, err := g.OnStart(t.Context())
			if goos == "linux" { // the unix rename over the running file is refused: no rollback
				if rolled || err != nil {
					t.Fatalf("OnStart = %v, %v; want no rollback (and the record kept)", rolled, err)
				}
				runsVersion(t, bin, "1.2.4")
				return
			}
			if !rolled || err != nil {
				t.Fatalf("OnStart = %v, %v; want a rollback", rolled, err)
			}
			runsVersion(t, bin, "1.2.3")
			runsVersion(t, bin+RejectedSuffix, "1.2.4")
			if _, err := os.Stat(bin + OldSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Errorf(".old still there after the rollback: %v", err)
			}
			// The rejected process exits; the service manager starts the restored binary.
			restored := newGuard(stateDir, bin, "1.2.3", newFakeClock())
			restored.swapper = swapper{fs: &windowsFiles{running: map[string]bool{bin: true}}, goos: goos}
			if mustStart(t, restored) {
				t.Fatal("the restored version rolled back")
			}
			if _, err := os.Stat(bin + RejectedSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the next start left %s%s (err=%v)", bin, RejectedSuffix, err)
			}
		})
	}
}

// TestReplaceOnWindows: `service install` while the service runs renames the running binary aside
// to .rejected (where it keeps running until the service restarts) and puts the copy in its name;
// a binary held open, or a second install before the restart, says to stop the service first.
// The copy by a rename over the running file (what install did before) is refused there.
func TestReplaceOnWindows(t *testing.T) {
	for _, tt := range []struct {
		name          string
		goos          string
		stopped, held bool
		asideRunning  bool   // a binary an earlier install set aside still runs
		errContains   string // "" = replaced
	}{
		{name: "while the service runs", goos: "windows"},
		{name: "while the service is stopped", goos: "windows", stopped: true},
		{name: "the binary is held open", goos: "windows", held: true, errContains: "runner-manager service stop"},
		{name: "again before a restart", goos: "windows", asideRunning: true, errContains: "runner-manager service stop"},
		{name: "a rename over it is refused there", goos: "linux", errContains: "Access is denied"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, src := installFixture(t, "v1.2.4")
			aside := in.Target + RejectedSuffix
			win := runningAs(in.Target)
			if tt.stopped {
				win = &windowsFiles{running: map[string]bool{}}
			}
			if tt.held {
				win.held = map[string]bool{in.Target: true}
			}
			if tt.asideRunning {
				placeBin(t, "v1.2.3", aside)
				win.running[aside] = true
			}
			in.swapper = swapper{fs: win, goos: tt.goos}
			if err := os.WriteFile(in.Target+OldSuffix, []byte("stale"), 0o755); err != nil {
				t.Fatal(err)
			}
			stillRunning, err := in.Replace(src)
			assertNoTempFiles(t, filepath.Dir(in.Target))
			if tt.errContains != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errContains) {
					t.Fatalf("Replace = %v, want an error containing %q", err, tt.errContains)
				}
				runsVersion(t, in.Target, "1.2.3")
				if !tt.stopped && !win.running[in.Target] {
					t.Errorf("the running binary is not at %s: running %v", in.Target, win.running)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			runsVersion(t, in.Target, "1.2.4")
			if _, err := os.Stat(in.Target + OldSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the leftover %s%s is still there (err=%v)", in.Target, OldSuffix, err)
			}
			if stillRunning != !tt.stopped {
				t.Errorf("stillRunning = %v with the service stopped=%v", stillRunning, tt.stopped)
			}
			if tt.stopped {
				if _, err := os.Stat(aside); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the replaced binary was kept as %s with nothing running it (err=%v)", aside, err)
				}
				return
			}
			runsVersion(t, aside, "1.2.3")
			if !win.running[aside] {
				t.Errorf("the running binary is not the one set aside: running %v", win.running)
			}
		})
	}
}
