package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runner-manager/runner-manager/internal/runner"
)

// Process is a live process whose command line names a directory of interest.
type Process struct {
	PID int
	Cmd string // the command line, arguments joined by spaces
}

func (p Process) String() string { return fmt.Sprintf("pid %d: %s", p.PID, p.Cmd) }

// ProcessesNaming lists live processes other than this one whose command line contains marker.
// Zombies (empty command line) run nothing and are skipped. It reads /proc (Linux).
func ProcessesNaming(marker string) ([]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w (the e2e suite needs /proc)", err)
	}
	self := os.Getpid()
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue // gone meanwhile, or a zombie
		}
		cmd := strings.TrimSpace(string(bytes.ReplaceAll(raw, []byte{0}, []byte{' '})))
		if strings.Contains(cmd, marker) {
			out = append(out, Process{PID: pid, Cmd: cmd})
		}
	}
	return out, nil
}

// RunnerProcesses lists the shim and runner processes of the daemon whose state directory is
// stateDir: every one names its runtime directory stateDir/runners/<attempt> on its command line.
func RunnerProcesses(stateDir string) ([]Process, error) {
	return ProcessesNaming(runtimeRoot(stateDir) + string(filepath.Separator))
}

// LiveAttempts are the attempt ids (runtime directory names) that have at least one live process.
func LiveAttempts(stateDir string) (map[string]bool, error) {
	ps, err := RunnerProcesses(stateDir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, p := range ps {
		if id := AttemptOfProcess(stateDir, p); id != "" {
			out[id] = true
		}
	}
	return out, nil
}

// AttemptOfProcess is the attempt id (runtime directory name) p's command line names, or "".
func AttemptOfProcess(stateDir string, p Process) string {
	_, rest, _ := strings.Cut(p.Cmd, runtimeRoot(stateDir)+string(filepath.Separator))
	id, _, _ := strings.Cut(rest, string(filepath.Separator))
	id, _, _ = strings.Cut(id, " ")
	return id
}

// KillRunnerProcesses SIGKILLs every process under stateDir's runtime directories, so a failed
// test leaves nothing running on a shared machine.
func KillRunnerProcesses(stateDir string) {
	ps, _ := RunnerProcesses(stateDir)
	for _, p := range ps {
		if proc, err := os.FindProcess(p.PID); err == nil {
			_ = proc.Kill() // SIGKILL; TerminateProcess on Windows
		}
	}
	// The runner cgroups of attempts a test left unconcluded: killed (a job's leftovers too) and
	// removed, so a shared host does not collect them. A host without cgroups has none.
	entries, _ := os.ReadDir(runtimeRoot(stateDir))
	for _, e := range entries {
		if e.IsDir() {
			_ = runner.RemoveRunnerCgroup(context.Background(), e.Name())
		}
	}
}

// runtimeRoot is where the daemon makes runtime directories (internal/daemon: state_dir/runners).
func runtimeRoot(stateDir string) string { return runner.RuntimeRootFor(stateDir) }

// AttemptOf is the attempt id behind a runner name (runner-manager-<attempt>).
func AttemptOf(runnerName string) string { return strings.TrimPrefix(runnerName, RunnerPrefix) }
