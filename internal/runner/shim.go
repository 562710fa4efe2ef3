package runner

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"
)

// The two pipes a shim inherits (on Unix as descriptors 3 and 4, on Windows as handles named in
// shimHandlesEnv): the JIT config, read to EOF and never stored; then the ready pipe, on which
// the shim reports its identity (or why it failed) before closing it.

// shimHandlesEnv names, on Windows, the inherited handles of the config and ready pipes ("12,16"):
// handle values, never the config itself. The shim drops it from the runner's environment.
const shimHandlesEnv = "RUNNER_MANAGER_SHIM_HANDLES"

// maxJITConfig bounds what the shim reads from the config pipe (a real one is a few KiB).
const maxJITConfig = 1 << 20

// readyReport is what the supervising shim writes to the ready pipe.
type readyReport struct {
	PID       int    `json:"pid,omitempty"`
	StartTime uint64 `json:"start_time,omitempty"`
	Error     string `json:"error,omitempty"`
}

type shimArgs struct {
	runtimeDir, attemptID, workDir string
	supervise                      bool
	uid, gid                       int // -1: run the runner as the shim's own user
	user, home                     string
	cgroup                         cgroupPaths // the runner's cgroup; V2 "" when the host has none usable
}

func parseShimArgs(args []string, stderr io.Writer) (shimArgs, error) {
	set := flag.NewFlagSet("shim", flag.ContinueOnError)
	set.SetOutput(stderr)
	var a shimArgs
	set.StringVar(&a.runtimeDir, "runtime-dir", "", "the attempt's runtime directory (holds run.sh)")
	set.StringVar(&a.attemptID, "attempt", "", "the attempt id, for logs and shim.json")
	set.StringVar(&a.workDir, "workdir", "", "the runner's working directory (default: the runtime directory)")
	set.BoolVar(&a.supervise, "supervise", false, "internal: run as the long-lived supervisor")
	set.IntVar(&a.uid, "uid", -1, "run the runner as this uid (the shim stays the daemon's)")
	set.IntVar(&a.gid, "gid", -1, "the runner's gid, with --uid")
	set.StringVar(&a.user, "user", "", "the runner user's name (USER, LOGNAME), with --uid")
	set.StringVar(&a.home, "home", "", "the runner user's home (HOME), with --uid")
	set.StringVar(&a.cgroup.V2, "cgroup", "", "the runner's cgroup v2 directory, which the runner is started in")
	set.Func("cgroup-v1", "controller=directory: a v1 cgroup the runner is started in too (repeatable)", func(v string) error {
		c, dir, ok := strings.Cut(v, "=")
		if !ok || c == "" || !filepath.IsAbs(dir) {
			return fmt.Errorf("want controller=/absolute/dir, got %q", v)
		}
		if a.cgroup.V1 == nil {
			a.cgroup.V1 = map[string]string{}
		}
		a.cgroup.V1[c] = dir
		return nil
	})
	if err := set.Parse(args); err != nil {
		return a, err
	}
	if a.runtimeDir == "" || !filepath.IsAbs(a.runtimeDir) {
		return a, fmt.Errorf("--runtime-dir must be an absolute path, got %q", a.runtimeDir)
	}
	if a.workDir == "" {
		a.workDir = RunnerRoot(a.runtimeDir)
	}
	if (a.cgroup.V2 != "" && !filepath.IsAbs(a.cgroup.V2)) || (a.cgroup.V2 == "" && len(a.cgroup.V1) > 0) {
		return a, fmt.Errorf("--cgroup must be an absolute path, and --cgroup-v1 needs --cgroup")
	}
	if (a.uid >= 0) != (a.gid >= 0) || (a.uid >= 0 && (a.uid == 0 || a.gid == 0 || a.user == "" || a.home == "")) {
		return a, fmt.Errorf("--uid and --gid go together, with --user and --home, and never name root")
	}
	return a, nil
}

// RunShim is `runner-manager shim`, started by Launcher.Start, never by hand. It runs in two
// stages so the daemon never has to reap it: the first stage (started by the daemon) starts the
// second in a new session, hands it the JIT config and exits at once; the second supervises
// run.sh until it exits and records the outcome in exit.json. Neither stage ever receives the JIT
// config on its command line or in its environment: it arrives on descriptor 3 and only the
// runner's environment carries it. ctx bounds only the start phase: once the runner runs, only
// its exit ends the supervisor, because a supervisor that could be cancelled would lose the result.
// environ is the environment the runner starts from.
func RunShim(ctx context.Context, args []string, environ []string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "shim")
	a, err := parseShimArgs(args, os.Stderr)
	if err != nil {
		log.Error("bad shim arguments; the shim is started by the daemon, not by hand", "err", err)
		return 2
	}
	log = log.With("attempt", a.attemptID)
	// How the pipes were passed is the launcher's business, never the runner's.
	environ = withoutVar(environ, shimHandlesEnv)
	if !supportedOS {
		log.Error("runner processes are not supported on this OS")
		return 1
	}
	if a.supervise {
		return supervise(ctx, log, a, environ)
	}
	return launch(ctx, log, environ)
}

// takeInherited reads the JIT config from the inherited config pipe and returns the ready pipe,
// after making every inherited descriptor close-on-exec so none leaks further than intended.
func takeInherited() (config []byte, ready *os.File, err error) {
	closeInheritedOnExec()
	in, ready := inheritedPipes()
	if !isPipe(in) || !isPipe(ready) {
		// Started by hand, or by something other than Launcher.Start: touch nothing.
		return nil, nil, errors.New("the shim must be started by the daemon, which passes it the config and ready pipes")
	}
	defer in.Close()
	config, err = io.ReadAll(io.LimitReader(in, maxJITConfig+1))
	switch {
	case err != nil:
		return nil, ready, fmt.Errorf("read the JIT config pipe: %w", err)
	case len(config) == 0:
		return nil, ready, errors.New("the JIT config pipe was empty")
	case len(config) > maxJITConfig:
		return nil, ready, fmt.Errorf("the JIT config is larger than %d bytes", maxJITConfig)
	}
	return config, ready, nil
}

func isPipe(f *os.File) bool {
	if f == nil {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&fs.ModeNamedPipe != 0
}

func report(ready *os.File, r readyReport) {
	if ready == nil {
		return
	}
	_ = json.NewEncoder(ready).Encode(r) // the daemon may be gone; nothing to do about it
	ready.Close()
}

// launch is the first stage: start the supervisor detached, give it the config, exit.
func launch(ctx context.Context, log *slog.Logger, environ []string) int {
	config, ready, err := takeInherited()
	fail := func(err error) int {
		log.Error("shim start failed", "err", err)
		report(ready, readyReport{Error: err.Error()})
		return 1
	}
	if err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(fmt.Errorf("find own executable: %w", err))
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return fail(fmt.Errorf("create config pipe: %w", err))
	}
	defer pw.Close()
	// Re-enter the same subcommand (os.Args[1:] holds it and our flags) as the supervisor.
	cmd := exec.Command(exe, append(os.Args[1:len(os.Args):len(os.Args)], "--supervise")...)
	cmd.Env = environ
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = newSession()
	passPipes(cmd, pr, ready)
	cmd, err = startDetached(cmd)
	pr.Close()
	if err != nil {
		return fail(fmt.Errorf("start the supervising shim %s: %w", exe, err))
	}
	ready.Close() // the supervisor holds its own copy and reports through it
	if _, err := pw.Write(config); err != nil {
		log.Error("hand the JIT config to the supervising shim", "err", err)
		return 1
	}
	_ = cmd.Process.Release() // init (or the service manager's subreaper) reaps it, not us
	return 0
}

// supervise is the second, long-lived stage.
func supervise(ctx context.Context, log *slog.Logger, a shimArgs, environ []string) int {
	// Catch before anything else: SIGUSR1's default action would kill the shim.
	sigs := make(chan os.Signal, 8)
	defer catchSignals(sigs)()

	config, ready, err := takeInherited()
	if err != nil {
		log.Error("shim start failed", "err", err)
		report(ready, readyReport{Error: err.Error()})
		return 1
	}
	state := ShimState{AttemptID: a.attemptID, PID: os.Getpid(), StartedAt: time.Now().UTC()}
	fail := func(err error) int {
		log.Error("shim start failed", "err", err)
		exit := Exit{ExitCode: -1, FinishedAt: time.Now().UTC(), Error: err.Error()}
		if werr := writeJSONAtomic(a.runtimeDir, ExitStatusFile, exit); werr != nil {
			log.Error("record exit status", "err", werr)
		}
		report(ready, readyReport{Error: err.Error()})
		return 1
	}
	if state.StartTime, err = ProcessStartTime(state.PID); err != nil {
		return fail(fmt.Errorf("read own start time: %w", err))
	}
	// Where stop asks are not signals (Windows), they are named after the shim's identity.
	unlisten, err := listenStopAsk(state.Handle(), sigs)
	if err != nil {
		return fail(err)
	}
	defer unlisten()
	if err := writeJSONAtomic(a.runtimeDir, ShimStateFile, state); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	cmd := hostLayout.runCommand(RunnerRoot(a.runtimeDir))
	cmd.Dir = a.workDir
	cmd.Env = append(withoutVar(environ, JITConfigEnv), JITConfigEnv+"="+string(config))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	tree, err := startRunner(cmd, a)
	if err != nil {
		return fail(fmt.Errorf("start runner %s: %w", cmd.Path, err))
	}
	defer tree.close()
	state.RunnerPID = cmd.Process.Pid
	state.RunnerStartTime, _ = ProcessStartTime(state.RunnerPID) // 0 if it already exited
	if err := writeJSONAtomic(a.runtimeDir, ShimStateFile, state); err != nil {
		log.Error("record runner pid", "err", err) // the shim's own identity is already on disk
	}
	log.Info("runner started", "shim_pid", state.PID, "runner_pid", state.RunnerPID)
	report(ready, readyReport{PID: state.PID, StartTime: state.StartTime})
	return wait(log, a.runtimeDir, tree, sigs)
}

// wait supervises the running runner: drops deafTo signals, turns a stop ask into the OS's stop
// request for the runner (runnerTree.askStop), ends what is left of its tree once it exits, and
// records the exit, with the out-of-memory kills of the runner's cgroup where it has one.
func wait(log *slog.Logger, runtimeDir string, tree *runnerTree, sigs <-chan os.Signal) int {
	cmd := tree.cmd
	done := make(chan error, 1)
	go func() {
		// The run script has exited, so no job is running: whatever is left of its tree is a
		// leftover of a finished job and must not outlive the attempt.
		tree.awaitExitAndSweep()
		done <- cmd.Wait()
	}()
	stopRequested := false
	for {
		select {
		case sig := <-sigs:
			if sig != stopAsk {
				log.Info("ignoring signal: the shim stops its runner only when the daemon asks", "signal", signalName(sig))
				continue
			}
			stopRequested = true
			how, err := tree.askStop()
			if err != nil && !errors.Is(err, os.ErrProcessDone) {
				log.Error("stop runner", "err", err)
				continue
			}
			log.Info("daemon asked to stop the runner", "runner_pid", cmd.Process.Pid, "how", how)
		case err := <-done:
			exit := Exit{FinishedAt: time.Now().UTC(), StopRequested: stopRequested}
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				exit.ExitCode, exit.Error = -1, "wait for runner: "+err.Error()
			} else {
				exit.ExitCode, exit.Signal = exitOf(cmd.ProcessState)
			}
			exit.OOMKills = tree.oomKills(log)
			if err := writeJSONAtomic(runtimeDir, ExitStatusFile, exit); err != nil {
				log.Error("record exit status", "err", err)
				return 1
			}
			log.Info("runner exited", "exit_code", exit.ExitCode, "signal", exit.Signal, "oom_kills", exit.OOMKills)
			return 0
		}
	}
}

// catchSignals makes the shim receive its stop ask (where it is a signal) and the signals it
// drops; the returned func undoes it.
func catchSignals(sigs chan<- os.Signal) func() {
	signal.Notify(sigs, append([]os.Signal{stopAsk}, deafTo...)...)
	return func() { signal.Stop(sigs) }
}

// withoutVar drops every entry of name from an environment list.
func withoutVar(environ []string, name string) []string {
	out := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
