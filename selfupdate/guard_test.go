package selfupdate

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// upgradedHost: the private copy runs 1.2.4 after an upgrade from 1.2.3 (kept as .old).
func upgradedHost(t *testing.T, oldVariant string) (stateDir, bin string) {
	t.Helper()
	root := t.TempDir()
	stateDir = filepath.Join(root, "state")
	bin = filepath.Join(stateDir, "bin", "runner-manager")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	placeBin(t, "v1.2.4", bin)
	if oldVariant != "" {
		placeBin(t, oldVariant, bin+OldSuffix)
	}
	return stateDir, bin
}

func newGuard(stateDir, bin, version string, clk Clock) *Guard {
	return &Guard{StateDir: stateDir, Binary: bin, Version: version, Clock: clk,
		Timeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)}
}

func mustStart(t *testing.T, g *Guard) bool {
	t.Helper()
	rolled, err := g.OnStart(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return rolled
}

func TestGuardRollsBackACrashLoop(t *testing.T) {
	stateDir, bin := upgradedHost(t, "v1.2.3")
	g := newGuard(stateDir, bin, "1.2.4", newFakeClock())
	for i := range DefaultLimit {
		if mustStart(t, g) {
			t.Fatalf("rolled back at start %d, before %d failed starts", i+1, DefaultLimit)
		}
		runsVersion(t, bin, "1.2.4")
	}
	if !mustStart(t, g) {
		t.Fatalf("start %d after %d deaths inside the window did not roll back", DefaultLimit+1, DefaultLimit)
	}
	runsVersion(t, bin, "1.2.3")
	if _, err := os.Stat(bin + OldSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".old still there after the rollback: %v", err)
	}
	st, err := ReadGuardState(stateDir)
	if err != nil || st.Rejected != "1.2.4" || st.RollbackWhy == "" {
		t.Fatalf("state = %+v, %v; want 1.2.4 rejected with a reason", st, err)
	}
	// The restored binary starts normally and knows not to take 1.2.4 again.
	restored := newGuard(stateDir, bin, "1.2.3", newFakeClock())
	if mustStart(t, restored) {
		t.Fatal("the restored version rolled back")
	}
	if got := restored.Rejected(); got != "1.2.4" {
		t.Fatalf("Rejected() = %q, want 1.2.4", got)
	}
}

func TestGuardCounting(t *testing.T) {
	tests := []struct {
		name   string
		steps  string // s = start (not yet healthy), h = healthy after the window, x = clean stop
		rolled bool   // whether the last start rolls back
	}{
		{"three deaths then start", "ssss", true},
		{"two deaths are not a loop", "sss", false},
		{"a healthy start proves the version", "shssss", false},
		{"a clean stop breaks the row", "ssxsss", false},
		{"deaths after a clean stop still count", "sxssss", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stateDir, bin := upgradedHost(t, "v1.2.3")
			clk := newFakeClock()
			g := newGuard(stateDir, bin, "1.2.4", clk)
			var rolled bool
			for _, step := range tt.steps {
				switch step {
				case 's':
					rolled = mustStart(t, g)
				case 'h':
					done := make(chan error, 1)
					go func() { done <- g.AwaitHealthy(t.Context()) }()
					clk.awaitWaiter(t)
					clk.Advance(DefaultWindow)
					if err := <-done; err != nil {
						t.Fatal(err)
					}
				case 'x':
					if err := g.MarkStopped(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if rolled != tt.rolled {
				t.Fatalf("last start rolled back = %v, want %v", rolled, tt.rolled)
			}
		})
	}
}

func TestGuardDoesNotRollBackToNothingOrBroken(t *testing.T) {
	for _, old := range []string{"", "fail"} {
		stateDir, bin := upgradedHost(t, old)
		g := newGuard(stateDir, bin, "1.2.4", newFakeClock())
		for range DefaultLimit + 2 {
			if mustStart(t, g) {
				t.Fatalf("old=%q: rolled back to a missing or broken binary", old)
			}
		}
		runsVersion(t, bin, "1.2.4")
	}
}

func TestGuardSurvivesADamagedRecord(t *testing.T) {
	stateDir, bin := upgradedHost(t, "v1.2.3")
	if err := os.WriteFile(filepath.Join(stateDir, GuardStateFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := newGuard(stateDir, bin, "1.2.4", newFakeClock())
	if mustStart(t, g) {
		t.Fatal("a damaged record caused a rollback")
	}
	st, err := ReadGuardState(stateDir)
	if err != nil || !st.Running || st.Version != "1.2.4" {
		t.Fatalf("record not rewritten: %+v, %v", st, err)
	}
	fi, err := os.Stat(filepath.Join(stateDir, GuardStateFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record mode = %v, %v; want 0600", fi.Mode(), err)
	}
}
