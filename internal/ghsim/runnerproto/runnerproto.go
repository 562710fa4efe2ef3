// Package runnerproto is the private contract between the GitHub simulator (internal/ghsim) and its
// fake runner (internal/ghsim/fakerunner): the JIT config document and the messages of the
// /_ghsim/runner/ API. It owns encoding only; it never talks to the network.
package runnerproto

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// EnvJITConfig is the variable the real actions/runner reads for `--jitconfig`
// (it maps every ACTIONS_RUNNER_INPUT_<ARG> variable to the argument), so the config stays out of `ps`.
const EnvJITConfig = "ACTIONS_RUNNER_INPUT_JITCONFIG"

// JITConfig is the document inside encoded_jit_config: base64(JSON(JITConfig)).
// The real service packs runner settings and credentials in the same way; ours names the simulator.
type JITConfig struct {
	URL        string   `json:"url"` // simulator base URL, without a trailing slash
	RunnerID   int64    `json:"runner_id"`
	RunnerName string   `json:"runner_name"`
	Credential string   `json:"credential"` // per-runner secret, proves the runner to the simulator
	Labels     []string `json:"labels"`
	WorkFolder string   `json:"work_folder,omitempty"`
	ScaleSetID int64    `json:"scale_set_id,omitempty"` // issued by a scale set's generatejitconfig
	// Fault is set only for FaultNeverOnline: a runner that never connects never reads the
	// connect reply, where every other fault is given.
	Fault string `json:"fault,omitempty"`
}

// Encode returns the base64 form served as encoded_jit_config.
func (c JITConfig) Encode() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode JIT config: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// Decode parses an encoded_jit_config value. Errors never quote the input: it holds a credential.
func Decode(s string) (JITConfig, error) {
	var c JITConfig
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return c, fmt.Errorf("decode JIT config: not base64 (%d bytes); pass encoded_jit_config unchanged", len(s))
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("decode JIT config: not a ghsim JIT document: %w", err)
	}
	if c.URL == "" || c.RunnerID == 0 || c.Credential == "" {
		return c, errors.New("decode JIT config: missing url, runner_id or credential")
	}
	return c, nil
}

// Fault kinds the fake runner obeys. They are set per runner or per job in the simulator.
const (
	FaultNone          = ""
	FaultExitAtStart   = "exit_at_start"  // exit 1 right after coming online, before taking a job
	FaultCrashMidJob   = "crash_mid_job"  // exit 1 halfway through the job without reporting it
	FaultHang          = "hang"           // take the job, then never progress nor exit (needs SIGKILL)
	FaultIgnoreSIGTERM = "ignore_sigterm" // SIGTERM is ignored, even while idle
	FaultNeverOnline   = "never_online"   // the process runs but never connects (proxy, firewall); exits on SIGTERM
	// FaultLingerAfterJob: reports its job completed (GitHub removes the ephemeral registration),
	// then keeps running instead of exiting, until SIGTERM (actions/runner #4569, #4312: a ghost).
	FaultLingerAfterJob = "linger_after_job"
)

// AllRunners is the runner name that sets a fault for every runner registered from then on.
const AllRunners = "*"

// Hello is sent to POST /_ghsim/runner/connect and every later call to authenticate the runner.
type Hello struct {
	RunnerID   int64  `json:"runner_id"`
	Credential string `json:"credential"`
}

// ConnectResponse tells the runner the fault it must play, if any.
type ConnectResponse struct {
	Fault string `json:"fault,omitempty"`
}

// Assignment is the body of POST /_ghsim/runner/acquire when a job was given (200); 204 means none yet.
type Assignment struct {
	JobID      int64  `json:"job_id"`
	JobName    string `json:"job_name"`
	DurationMS int64  `json:"duration_ms"` // <0: run until the simulator says finish
	Fault      string `json:"fault,omitempty"`
	// Command, when set, makes this a command job: the runner runs it with /bin/sh -c as its own
	// user, in its working directory, and the job lasts as long as the command (DurationMS is
	// ignored). Tests act as a workflow job through it, hostile ones included.
	Command string `json:"command,omitempty"`
}

// MaxCommandOutput bounds each of a command job's stdout and stderr as the runner reports them;
// the rest is dropped and the result marked truncated.
const MaxCommandOutput = 64 << 10

// CommandResult is what a command job's command did, reported with the job's completion.
type CommandResult struct {
	ExitCode  int    `json:"exit_code"`       // -1 when killed by a signal or never started
	Stdout    string `json:"stdout"`          // at most MaxCommandOutput bytes
	Stderr    string `json:"stderr"`          // at most MaxCommandOutput bytes
	Truncated bool   `json:"truncated"`       // stdout or stderr was longer than MaxCommandOutput
	Error     string `json:"error,omitempty"` // the command could not be started or waited for
}

// JobStatus is the body of POST /_ghsim/runner/job: whether the simulator ended the job early.
type JobStatus struct {
	Finish     bool   `json:"finish"`
	Conclusion string `json:"conclusion,omitempty"`
}

// JobRequest names a job in /_ghsim/runner/job and /_ghsim/runner/complete.
type JobRequest struct {
	Hello
	JobID      int64  `json:"job_id"`
	Conclusion string `json:"conclusion,omitempty"`
	// Result is a command job's outcome, sent with its completion; nil for other jobs.
	Result *CommandResult `json:"result,omitempty"`
}
