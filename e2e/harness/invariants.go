package harness

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// SettleTimeout bounds how long AssertNoLeaks waits for the last runners to wind down.
const SettleTimeout = 30 * time.Second

// Leaks is what a run left behind: anything here breaks DESIGN.md promise 2.
type Leaks struct {
	Registrations []string  // runner-manager-* runners the simulator still lists
	Processes     []Process // shim or runner processes under the state directory
	Dirs          []string  // runtime directories left in state_dir/runners
}

// Empty reports whether nothing leaked.
func (l Leaks) Empty() bool { return len(l.Registrations)+len(l.Processes)+len(l.Dirs) == 0 }

func (l Leaks) String() string {
	var b strings.Builder
	for _, r := range l.Registrations {
		b.WriteString("  registration still listed: " + r + "\n")
	}
	for _, p := range l.Processes {
		b.WriteString("  process alive: " + p.String() + "\n")
	}
	for _, d := range l.Dirs {
		b.WriteString("  runtime directory left: " + d + "\n")
	}
	return b.String()
}

// FindLeaks looks, once, in the three places a runner can outlive its purpose.
func FindLeaks(sim *Sim, stateDir string) (Leaks, error) {
	var l Leaks
	for _, r := range sim.ManagedRunners() {
		l.Registrations = append(l.Registrations, r.Name)
	}
	var err error
	if l.Processes, err = RunnerProcesses(stateDir); err != nil {
		return l, err
	}
	entries, err := os.ReadDir(runtimeRoot(stateDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l, err
	}
	for _, e := range entries {
		l.Dirs = append(l.Dirs, filepath.Join(runtimeRoot(stateDir), e.Name()))
	}
	return l, nil
}

// AssertNoLeaks waits up to SettleTimeout for no runner-manager-* registration to be listed at the
// simulator, no process under stateDir's runtime directories to be alive, and state_dir/runners to be
// empty; otherwise it fails the test listing what is left.
func AssertNoLeaks(t testing.TB, sim *Sim, stateDir string) {
	t.Helper()
	var l Leaks
	var err error
	Poll(SettleTimeout, func() bool {
		l, err = FindLeaks(sim, stateDir)
		return err == nil && l.Empty()
	})
	if err != nil {
		t.Fatalf("harness: look for leaks: %v", err)
	}
	if !l.Empty() {
		t.Fatalf("leaks after %s (promise 2: nothing leaks):\n%s", SettleTimeout, l)
	}
}

// AssertNoBusyKilled checks promise 1 on the simulator's jobs: every job ended `success`, and no job
// is in progress on a runner that is gone. A runner killed mid-job either reports failure/cancelled
// or (crashed, as docs/simulator.md describes) leaves its job in_progress forever with no process
// under stateDir running it. Jobs in faulted were disturbed on purpose by the test and are skipped.
// Queued jobs are not judged here: wait for them with WaitJobsDone.
func AssertNoBusyKilled(t testing.TB, sim *Sim, stateDir string, faulted ...int64) {
	t.Helper()
	live, err := LiveAttempts(stateDir)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	var bad []string
	for _, j := range sim.Jobs() {
		if slices.Contains(faulted, j.ID) {
			continue
		}
		switch {
		case j.Status == ghsim.StatusCompleted && j.Conclusion != "success":
			bad = append(bad, describeJob(j)+": its runner did not finish it")
		case j.Status == ghsim.StatusInProgress && !live[AttemptOf(j.RunnerName)]:
			bad = append(bad, describeJob(j)+": in progress, but no process of its runner is alive")
		}
	}
	if len(bad) > 0 {
		t.Fatalf("busy runners were killed (promise 1):\n  %s", strings.Join(bad, "\n  "))
	}
}
