package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// Files the shim writes into a runtime directory (docs/runner-processes.md).
const (
	ShimStateFile  = "shim.json"                      // written when the shim starts, updated when the runner starts
	ExitStatusFile = "exit.json"                      // written once, when the runner has exited
	LogFile        = "_diag/runner.log"               // the shim's and the runner's stdout and stderr
	runnerRootDir  = "runner"                         // the runner's own root below the attempt dir
	JITConfigEnv   = "ACTIONS_RUNNER_INPUT_JITCONFIG" // how the runner receives its JIT config
)

// RunnerRoot is the runner's own directory in an attempt's runtime directory: the package is
// materialised there and it is the runner's, since the actions runner writes into its root at
// start. The attempt directory around it is the daemon's and holds the shim's files (shim.json,
// exit.json, the log), which the runner can neither write nor replace.
func RunnerRoot(runtimeDir string) string { return filepath.Join(runtimeDir, runnerRootDir) }

// RuntimeRootFor is where the daemon keeps runtime directories for stateDir: beside it, not
// inside it, since the state dir is 0700 and a runner user must reach its own directory; beside
// it keeps it on the cache's filesystem, so the package can be hardlinked.
func RuntimeRootFor(stateDir string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(stateDir)), filepath.Base(stateDir)+"-runners")
}

// Handle identifies a shim process for its whole life: a pid alone could be reused.
type Handle struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"` // ProcessStartTime of PID when the shim started
}

// ShimState is the content of shim.json. It lets recovery find a shim whose pid never reached
// the journal (the daemon died between Start and its journal write).
type ShimState struct {
	AttemptID       string    `json:"attempt_id"`
	PID             int       `json:"pid"`
	StartTime       uint64    `json:"start_time"`
	RunnerPID       int       `json:"runner_pid,omitempty"` // 0 until run.sh has been started
	RunnerStartTime uint64    `json:"runner_start_time,omitempty"`
	StartedAt       time.Time `json:"started_at"`
}

// Handle is the shim's identity as Start returns it.
func (s ShimState) Handle() Handle { return Handle{PID: s.PID, StartTime: s.StartTime} }

// Exit is the content of exit.json: how the runner ended.
type Exit struct {
	ExitCode      int       `json:"exit_code"`        // -1 when killed by a signal or never started
	Signal        string    `json:"signal,omitempty"` // "SIGKILL" etc. when killed by a signal
	FinishedAt    time.Time `json:"finished_at"`
	StopRequested bool      `json:"stop_requested,omitempty"` // the daemon had asked the shim to stop the runner
	Error         string    `json:"error,omitempty"`          // the runner could not be started at all
	// OOMKills is how many processes of the runner's cgroup the kernel killed for going past its
	// memory limit (OOMKills, read by the shim once the runner has exited).
	OOMKills uint64 `json:"oom_kills,omitempty"`
}

// ReadShimState reads runtimeDir/shim.json. A shim that never started leaves no file: the error
// then matches fs.ErrNotExist.
func ReadShimState(runtimeDir string) (ShimState, error) {
	var s ShimState
	if err := readJSON(runtimeDir, ShimStateFile, &s); err != nil {
		return ShimState{}, err
	}
	if s.PID <= 0 {
		return ShimState{}, fmt.Errorf("%s: no shim pid recorded (the file is corrupt)", filepath.Join(runtimeDir, ShimStateFile))
	}
	return s, nil
}

// ExitStatus reads runtimeDir/exit.json. ok is false while the runner has not exited (or its
// shim died before it could record the outcome; Alive tells the two apart).
func ExitStatus(runtimeDir string) (exit Exit, ok bool, err error) {
	if err := readJSON(runtimeDir, ExitStatusFile, &exit); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Exit{}, false, nil
		}
		return Exit{}, false, err
	}
	return exit, true, nil
}
