// Command fakerunner stands in for actions/runner's Runner.Listener in tests: `run.sh --jitconfig X`
// (or ACTIONS_RUNNER_INPUT_JITCONFIG) decodes a ghsim JIT config, comes online at the simulator,
// takes one job whose labels it satisfies, "runs" it for the job's duration, reports completion and
// exits 0, as an ephemeral runner does. A command job runs its shell command instead, as the
// runner's own user, and reports the command's output and exit status with the completion. It only
// ever talks to the simulator named in its config.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
)

// pollEvery is how often an idle runner asks for a job and a busy one checks its job; the real
// runner long-polls, short polls keep tests fast.
const pollEvery = 50 * time.Millisecond

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "run" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("Runner.Listener", flag.ContinueOnError)
	jit := fs.String("jitconfig", "", "encoded JIT config (or set "+runnerproto.EnvJITConfig+")")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *jit == "" {
		*jit = os.Getenv(runnerproto.EnvJITConfig)
	}
	if *jit == "" {
		fmt.Fprintln(os.Stderr, "fakerunner: no JIT config: pass --jitconfig or set "+runnerproto.EnvJITConfig)
		return 2
	}
	cfg, err := runnerproto.Decode(*jit)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakerunner:", err)
		return 2
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	r := &runner{cfg: cfg, http: &http.Client{Timeout: 10 * time.Second}, sigs: sigs, diag: openDiag()}
	r.note("runner %d starting", cfg.RunnerID)
	code := r.main()
	r.note("runner exiting with status %d", code)
	return code
}

// openDiag creates the runner's diagnostic log as actions/runner does, _diag/Runner_<time>-utc.log
// in its root (the directory of run.sh, the parent of bin/), so tests can see the daemon keep it.
// Without one (a read-only root) the runner runs on and notes nothing.
func openDiag() io.Writer {
	exe, err := os.Executable()
	if err != nil {
		return io.Discard
	}
	dir := filepath.Join(filepath.Dir(filepath.Dir(exe)), "_diag")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return io.Discard
	}
	f, err := os.OpenFile(filepath.Join(dir, "Runner_"+time.Now().UTC().Format("20060102-150405")+"-utc.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return io.Discard
	}
	return f // closed by the process's exit
}

// note writes one line to the diagnostic log; warn also to stderr (the shim's log).
func (r *runner) note(format string, args ...any) {
	fmt.Fprintf(r.diag, "[%s INFO Runner] %s\n", time.Now().UTC().Format("2006-01-02 15:04:05Z"), fmt.Sprintf(format, args...))
}

func (r *runner) warn(msg string, args ...any) {
	line := strings.TrimSpace(fmt.Sprintln(append([]any{msg}, args...)...))
	fmt.Fprintln(os.Stderr, line)
	fmt.Fprintf(r.diag, "[%s ERR  Runner] %s\n", time.Now().UTC().Format("2006-01-02 15:04:05Z"), line)
}

type runner struct {
	cfg   runnerproto.JITConfig
	http  *http.Client
	sigs  chan os.Signal
	fault string
	diag  io.Writer // _diag/Runner_*.log (openDiag)
}

func (r *runner) hello() runnerproto.Hello {
	return runnerproto.Hello{RunnerID: r.cfg.RunnerID, Credential: r.cfg.Credential}
}

func (r *runner) main() int {
	if r.cfg.Fault == runnerproto.FaultNeverOnline {
		// As a runner behind a proxy or firewall: it runs, it never reaches GitHub.
		r.warn("fakerunner: never connecting (fault never_online)")
		<-r.sigs
		return 0
	}
	var conn runnerproto.ConnectResponse
	if _, err := r.call("connect", r.hello(), &conn); err != nil {
		r.warn("fakerunner: connect to the simulator failed:", err)
		return 1
	}
	r.fault = conn.Fault
	fmt.Printf("√ Connected to GitHub\n\nCurrent runner version: 'ghsim'\nListening for Jobs\n")
	if r.fault == runnerproto.FaultExitAtStart {
		r.warn("fakerunner: exiting at start (fault)")
		return 1
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		var a runnerproto.Assignment
		code, err := r.call("acquire", r.hello(), &a)
		if err == nil && code == http.StatusOK {
			return r.runJob(a)
		}
		if code == http.StatusNotFound || code == http.StatusUnauthorized {
			r.warn("fakerunner: the simulator no longer knows this runner; exiting")
			return 1
		}
		select {
		case <-r.sigs:
			if r.fault == runnerproto.FaultIgnoreSIGTERM {
				continue
			}
			// Idle runner on SIGTERM: go offline and exit 0, as actions/runner does.
			_, _ = r.call("disconnect", r.hello(), nil)
			fmt.Println("Exiting...")
			return 0
		case <-tick.C:
		}
	}
}

// runJob plays one job. SIGTERM while busy is noted and obeyed only once the job is done.
func (r *runner) runJob(a runnerproto.Assignment) int {
	fault := a.Fault
	if fault == "" {
		fault = r.fault
	}
	fmt.Printf("%s: Running job: %s\n", time.Now().UTC().Format(time.DateTime), a.JobName)
	r.note("running job %d: %s", a.JobID, a.JobName)
	start := time.Now()
	d := time.Duration(a.DurationMS) * time.Millisecond
	switch fault {
	case runnerproto.FaultHang:
		for range r.sigs { // never progresses; only SIGKILL ends it
		}
	case runnerproto.FaultCrashMidJob:
		time.Sleep(d / 2)
		r.warn("fakerunner: crashing mid-job (fault)")
		return 1
	}
	req := runnerproto.JobRequest{Hello: r.hello(), JobID: a.JobID}
	if a.Command != "" {
		res := r.runCommand(a)
		req.Result, req.Conclusion = &res.CommandResult, res.conclusion
	} else {
		req.Conclusion = r.playJob(a.JobID, func() bool { return d >= 0 && time.Since(start) >= d })
	}
	for attempt := 0; ; attempt++ {
		_, err := r.call("complete", req, nil)
		if err == nil {
			break
		}
		if attempt == 20 {
			r.warn("fakerunner: reporting job completion failed:", err)
			return 1
		}
		time.Sleep(pollEvery)
	}
	fmt.Printf("%s: Job %s completed with result: %s\n", time.Now().UTC().Format(time.DateTime), a.JobName, req.Conclusion)
	if fault == runnerproto.FaultLingerAfterJob {
		// A ghost: its job is over and GitHub has forgotten it, yet it runs on, asking nothing.
		fmt.Fprintln(os.Stderr, "fakerunner: lingering after the job (fault linger_after_job)")
		<-r.sigs
		return 0
	}
	return 0
}

// finishedBySim asks the simulator whether FinishJob ended job id early, and with what conclusion.
func (r *runner) finishedBySim(id int64) (bool, string) {
	var st runnerproto.JobStatus
	req := runnerproto.JobRequest{Hello: r.hello(), JobID: id}
	code, err := r.call("job", req, &st)
	return err == nil && code == http.StatusOK && st.Finish, st.Conclusion
}

// playJob "runs" a job until done() or the simulator finishes it, and returns its conclusion.
func (r *runner) playJob(id int64, done func() bool) string {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !done() {
		select {
		case <-r.sigs: // busy: finish the job first
		case <-tick.C:
		}
		if fin, concl := r.finishedBySim(id); fin {
			if concl == "" {
				concl = "success"
			}
			return concl
		}
	}
	return "success"
}

type commandOutcome struct {
	runnerproto.CommandResult
	conclusion string
}

// runCommand runs a command job's command with the host's shell (shellCommand), in the runner's working directory and
// environment minus the JIT config (actions/runner does not pass it to a job either), and returns
// what it did. A FinishJob while it runs kills the shell. Background processes the command leaves
// stay in the runner's process group, as a real job's do; one holding the output pipes delays the
// report by at most the wait delay.
func (r *runner) runCommand(a runnerproto.Assignment) commandOutcome {
	cmd := shellCommand(a.Command)
	var stdout, stderr boundedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, runnerproto.EnvJITConfig+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return commandOutcome{runnerproto.CommandResult{ExitCode: -1, Error: "start the command: " + err.Error()}, "failure"}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var finishedAs string
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var werr error
wait:
	for {
		select {
		case werr = <-done:
			break wait
		case <-r.sigs: // busy: finish the job first
		case <-tick.C:
			if finishedAs != "" {
				continue
			}
			if fin, concl := r.finishedBySim(a.JobID); fin {
				finishedAs = cmp.Or(concl, "cancelled")
				_ = cmd.Process.Kill()
			}
		}
	}
	res := runnerproto.CommandResult{ExitCode: cmd.ProcessState.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String(),
		Truncated: stdout.truncated || stderr.truncated}
	if werr != nil && !errors.Is(werr, exec.ErrWaitDelay) && !errors.As(werr, new(*exec.ExitError)) {
		res.Error = "wait for the command: " + werr.Error()
	}
	concl := "failure"
	switch {
	case finishedAs != "":
		concl = finishedAs
	case res.ExitCode == 0:
		concl = "success"
	}
	return commandOutcome{res, concl}
}

// shellCommand is how a job's `run:` step starts: /bin/sh -c, or cmd /c on Windows (the fake
// runner built for a win-x64 package, see ghsim.BuildFakeRunnerPackageFor).
func shellCommand(command string) *exec.Cmd {
	if runtime.GOOS == "windows" {
		return exec.Command("cmd", "/c", command)
	}
	return exec.Command("/bin/sh", "-c", command)
}

// boundedBuffer keeps the first runnerproto.MaxCommandOutput bytes written to it and drops the
// rest, accepting every write so the command never sees a broken pipe.
type boundedBuffer struct {
	buf       bytes.Buffer
	truncated bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := runnerproto.MaxCommandOutput - b.buf.Len()
	if len(p) > room {
		b.truncated = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *boundedBuffer) String() string { return b.buf.String() }

// call POSTs body to /_ghsim/runner/<op> and decodes a 200 answer into out.
func (r *runner) call(op string, body, out any) (int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.cfg.URL+"/_ghsim/runner/"+op, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusOK && out != nil:
		return resp.StatusCode, json.Unmarshal(data, out)
	case resp.StatusCode >= 300:
		return resp.StatusCode, errors.New(op + ": " + resp.Status)
	}
	return resp.StatusCode, nil
}
