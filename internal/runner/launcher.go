package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	// ErrOutsideRuntimeRoot: a runtime directory path is not below the launcher's runtime root.
	ErrOutsideRuntimeRoot = errors.New("path is outside the runtime root")
	// ErrRunnerAlive: the runtime directory still belongs to a live shim or runner.
	ErrRunnerAlive = errors.New("runner is still running")
)

// LauncherOptions configures a Launcher.
type LauncherOptions struct {
	// RuntimeRoot is the directory every runtime directory lives below (required). Start and
	// RemoveRuntimeDir refuse any path outside it.
	RuntimeRoot string
	// LegacyRoots are runtime roots of earlier versions: directories below them are still
	// removed (an upgrade leaves attempts there), never started.
	LegacyRoots []string
	// ShimExecutable and ShimArgs start the shim; default os.Executable() and, when ShimArgs is
	// nil, ["shim"]. Tests point them at the test binary.
	ShimExecutable string
	ShimArgs       []string
	// StartTimeout bounds how long Start waits for the shim to confirm; default 15 s.
	StartTimeout time.Duration
	// BaseEnv is the environment runners start from before Spec.Env is applied; default: the
	// allowlisted variables (PATH, HOME, USER, LANG, ...; SystemRoot, TEMP, ... on Windows:
	// layout.envAllowlist) of the daemon's own environment.
	BaseEnv []string
	Logger  *slog.Logger // default slog.Default()
	// Cgroups, when set, runs each runner in a cgroup of its own (DetectCgroups), killed whole
	// by RemoveRuntimeDir. nil: the host has no usable cgroups, and a runner's leftovers are
	// ended by its slot's uid (KillUID) before the slot's next job.
	Cgroups *Cgroups
	// AfterCgroup is called once a runner's cgroup exists and before the runner starts (the
	// crash tests' kill point); nil in production.
	AfterCgroup func(attemptID string)
}

// Launcher starts runners under the shim and stops them on request.
type Launcher struct {
	root    string
	legacy  []string
	exe     string
	args    []string
	timeout time.Duration
	env     []string
	log     *slog.Logger
	cg      *Cgroups
	after   func(attemptID string)
}

// NewLauncher checks opts and fills in defaults.
func NewLauncher(opts LauncherOptions) (*Launcher, error) {
	if opts.RuntimeRoot == "" {
		return nil, errors.New("runner launcher: no runtime root configured")
	}
	root, err := filepath.Abs(opts.RuntimeRoot)
	if err != nil {
		return nil, fmt.Errorf("runner launcher: runtime root %q: %w", opts.RuntimeRoot, err)
	}
	l := &Launcher{root: root, legacy: opts.LegacyRoots, exe: opts.ShimExecutable, args: opts.ShimArgs, timeout: opts.StartTimeout,
		env: opts.BaseEnv, log: opts.Logger, cg: opts.Cgroups, after: opts.AfterCgroup}
	if l.exe == "" {
		if l.exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("runner launcher: find own executable to run the shim: %w", err)
		}
	}
	if l.args == nil {
		l.args = []string{"shim"}
	}
	if l.timeout <= 0 {
		l.timeout = 15 * time.Second
	}
	if l.env == nil {
		l.env = hostLayout.inheritedEnv(os.Environ())
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	return l, nil
}

// RuntimeRoot is the absolute directory runtime directories live below.
func (l *Launcher) RuntimeRoot() string { return l.root }

// Spec describes one runner to start. RuntimeDir must be a materialised package below the
// runtime root; JITConfig is a secret and reaches only the runner's environment.
type Spec struct {
	AttemptID  string
	RuntimeDir string
	JITConfig  string
	Env        map[string]string // added to the runner's environment (overrides BaseEnv)
	WorkDir    string            // run.sh's working directory; default the runner's root
	// User is who the runner runs as; nil: the daemon's own user. The shim stays the daemon's.
	User *User
	// Limits bound the runner's whole process tree, written into its cgroup before it starts.
	Limits Limits
}

func (l *Launcher) checkSpec(s Spec) (dir string, err error) {
	if !keyPart.MatchString(s.AttemptID) {
		return "", fmt.Errorf("start runner: attempt id %q is not a plain name", s.AttemptID)
	}
	if dir, err = l.inRoot(s.RuntimeDir); err != nil {
		return "", fmt.Errorf("start runner for attempt %s: %w", s.AttemptID, err)
	}
	if s.JITConfig == "" {
		return "", fmt.Errorf("start runner for attempt %s: no JIT config", s.AttemptID)
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || k == JITConfigEnv {
			return "", fmt.Errorf("start runner for attempt %s: environment variable name %q is not allowed", s.AttemptID, k)
		}
	}
	script := hostLayout.runScript
	if info, err := os.Stat(filepath.Join(RunnerRoot(dir), script)); err != nil || !info.Mode().IsRegular() || hostLayout.execBit && info.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("start runner for attempt %s: %s has no executable %s (materialise the package first)", s.AttemptID, dir, script)
	}
	if _, err := os.Stat(filepath.Join(dir, ShimStateFile)); err == nil {
		return "", fmt.Errorf("start runner for attempt %s: %s already has a shim (a runtime directory is used once)", s.AttemptID, dir)
	}
	return dir, nil
}

// inRoot returns the absolute form of dir if it is strictly below the runtime root.
func (l *Launcher) inRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil || !isUnder(l.root, abs) {
		return "", fmt.Errorf("runtime directory %q: %w %s", dir, ErrOutsideRuntimeRoot, l.root)
	}
	return abs, nil
}

// inAnyRoot is inRoot that also accepts a legacy root, and says which root dir is below.
func (l *Launcher) inAnyRoot(dir string) (abs, root string, err error) {
	if abs, err = l.inRoot(dir); err == nil {
		return abs, l.root, nil
	}
	for _, r := range l.legacy {
		if a, aerr := filepath.Abs(dir); aerr == nil && isUnder(r, a) {
			return a, r, nil
		}
	}
	return "", "", err
}

func (l *Launcher) environ(extra map[string]string) []string {
	env := slices.Clone(l.env)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(withoutVar(env, k), k+"="+extra[k])
	}
	return env
}

// Start starts the runner of s under a detached shim and returns the shim's identity once the
// shim has confirmed that run.sh is running. The shim outlives the daemon. When Start returns an
// error, nothing it started is left running.
func (l *Launcher) Start(ctx context.Context, s Spec) (Handle, error) {
	if !supportedOS {
		return Handle{}, fmt.Errorf("start runner: %w", errUnsupportedOS)
	}
	dir, err := l.checkSpec(s)
	if err != nil {
		return Handle{}, err
	}
	workDir := s.WorkDir
	if workDir == "" {
		workDir = RunnerRoot(dir)
	} else if err := os.MkdirAll(workDir, 0o755); err != nil {
		return Handle{}, fmt.Errorf("start runner for attempt %s: create its work directory: %w", s.AttemptID, err)
	}
	var userArgs []string
	if u := s.User; u != nil {
		if err := l.handOver(ctx, *u, dir, workDir, s.WorkDir != ""); err != nil {
			return Handle{}, fmt.Errorf("start runner for attempt %s as %s: %w", s.AttemptID, u.Name, err)
		}
		userArgs = []string{"--uid", strconv.FormatUint(uint64(u.UID), 10), "--gid", strconv.FormatUint(uint64(u.GID), 10),
			"--user", u.Name, "--home", u.Home}
	}
	logPath := filepath.Join(dir, LogFile)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return Handle{}, fmt.Errorf("start runner for attempt %s: %w", s.AttemptID, err)
	}
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return Handle{}, fmt.Errorf("start runner for attempt %s: open log: %w", s.AttemptID, err)
	}
	defer logFile.Close()
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return Handle{}, fmt.Errorf("start runner for attempt %s: %w", s.AttemptID, err)
	}
	defer cfgW.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		return Handle{}, fmt.Errorf("start runner for attempt %s: %w", s.AttemptID, err)
	}
	defer readyR.Close()

	args := append(slices.Clone(l.args), "--runtime-dir", dir, "--attempt", s.AttemptID, "--workdir", workDir)
	args = append(args, userArgs...)
	cgArgs, err := l.prepareCgroup(s)
	if err != nil {
		return Handle{}, fmt.Errorf("start runner for attempt %s: %w", s.AttemptID, err)
	}
	args = append(args, cgArgs...)
	cmd := exec.Command(l.exe, args...)
	cmd.Dir = dir
	cmd.Env = l.environ(s.Env)
	cmd.Stdout, cmd.Stderr = logFile, logFile // Stdin nil: /dev/null
	cmd.SysProcAttr = newSession()
	passPipes(cmd, cfgR, readyW)
	cmd, err = startDetached(cmd)
	cfgR.Close()
	readyW.Close()
	if err != nil {
		return Handle{}, fmt.Errorf("start runner for attempt %s: start shim %s: %w", s.AttemptID, l.exe, err)
	}
	h, err := l.handshake(ctx, cmd, cfgW, readyR, s.JITConfig)
	if err != nil {
		l.abandon(ctx, cmd, dir, s.AttemptID)
		return Handle{}, fmt.Errorf("start runner for attempt %s: %w (see %s)", s.AttemptID, err, logPath)
	}
	l.log.Debug("runner started", "attempt", s.AttemptID, "shim_pid", h.PID, "runtime_dir", dir)
	return h, nil
}

// HandOver prepares runtime directory dir for a runner that runs as u elsewhere than under the
// shim (a container, whose uid is the slot's): slot hygiene first, then the runner's root, _work
// and _diag become u's, as for a host runner.
func (l *Launcher) HandOver(ctx context.Context, u User, dir string) error {
	abs, err := l.inRoot(dir)
	if err != nil {
		return fmt.Errorf("hand %s over to %s: %w", dir, u.Name, err)
	}
	return l.handOver(ctx, u, abs, RunnerRoot(abs), false)
}

// handOver prepares a runner user's turn: slot hygiene first (nothing the slot's previous job left
// survives), then the runner's root, its _work and _diag and its own work directory become the
// user's. The package files inside stay the daemon's and read-only: the user may replace its
// links, never the inodes the cache shares.
func (l *Launcher) handOver(ctx context.Context, u User, dir, workDir string, ownWorkDir bool) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the daemon is not root, so it cannot run runners as their slot users: run it as root, or set daemon.runner_user = \"daemon\" (runners then share the daemon's user and can read its credentials)")
	}
	if err := CleanUser(ctx, u); err != nil {
		return err
	}
	root := RunnerRoot(dir)
	dirs := []string{root}
	// The runner writes its job workspace and diagnostics there (actions/runner's _work, _diag):
	// Materialize made them, so they are the daemon's until handed over.
	for _, d := range writableDirs {
		dirs = append(dirs, filepath.Join(root, d))
	}
	if ownWorkDir && workDir != root {
		dirs = append(dirs, workDir)
	}
	for _, d := range dirs {
		if err := os.Lchown(d, int(u.UID), int(u.GID)); err != nil {
			return fmt.Errorf("give %s to the runner user: %w", d, err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return fmt.Errorf("give %s to the runner user: %w", d, err)
		}
	}
	return nil
}

// handshake gives the first-stage shim the JIT config and waits, bounded by ctx and the start
// timeout, for the supervisor's report on the ready pipe.
func (l *Launcher) handshake(ctx context.Context, cmd *exec.Cmd, cfgW, readyR *os.File, config string) (Handle, error) {
	stop := bound(ctx, time.Now().Add(l.timeout), cfgW, readyR)
	defer stop()
	// A broken pipe: the shim exited before reading; its report (or its silence) below says why.
	if _, err := io.WriteString(cfgW, config); err != nil && !isBrokenPipe(err) {
		return Handle{}, l.handshakeErr(ctx, "hand the JIT config to the shim", err)
	}
	cfgW.Close()
	data, err := io.ReadAll(io.LimitReader(readyR, 64<<10))
	if err != nil {
		return Handle{}, l.handshakeErr(ctx, "wait for the shim to confirm", err)
	}
	if err := cmd.Wait(); err != nil {
		// The first stage reports its own failures on the ready pipe too; prefer that message.
		if r, ok := parseReady(data); !ok || r.Error == "" {
			return Handle{}, fmt.Errorf("shim failed: %w", err)
		}
	}
	r, ok := parseReady(data)
	switch {
	case !ok:
		return Handle{}, errors.New("the shim exited without confirming start")
	case r.Error != "":
		return Handle{}, fmt.Errorf("shim: %s", r.Error)
	}
	return Handle{PID: r.PID, StartTime: r.StartTime}, nil
}

func (l *Launcher) handshakeErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("%s: no answer within %s", what, l.timeout)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func parseReady(data []byte) (readyReport, bool) {
	var r readyReport
	if err := json.Unmarshal(bytes.TrimSpace(data), &r); err != nil || (r.Error == "" && r.PID <= 0) {
		return readyReport{}, false
	}
	return r, true
}

// abandon kills whatever a failed Start left: the first stage if still running, and a
// supervisor and runner that got far enough to write shim.json. Nothing was confirmed to the
// caller, so nothing here can be a runner the engine believes in.
func (l *Launcher) abandon(ctx context.Context, cmd *exec.Cmd, dir, attemptID string) {
	if cmd.ProcessState == nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	if l.cg != nil {
		// The runner and all it forked, whether or not its shim got to say so.
		if err := l.cg.Remove(context.WithoutCancel(ctx), attemptID); err != nil {
			l.log.Warn("a runner that failed to start left its cgroup; it is removed with its runtime directory", "attempt", attemptID, "err", err)
		}
	}
	st, err := ReadShimState(dir)
	if err != nil {
		return
	}
	if st.RunnerPID > 0 {
		_ = killTree(st)
	}
	_ = signalIdentified(st.PID, st.StartTime, syscall.SIGKILL)
}

// Stop asks the shim h to stop its runner: SIGUSR1 to the shim, which sends the runner SIGTERM; on
// Windows the shim's stop event, on which it sends the runner Ctrl-Break (or, failing that, ends
// its job object). The shim keeps supervising and records the exit. It returns once the ask is delivered, not when the runner has exited: poll ExitStatus.
// The caller guarantees the runner is idle; a busy runner is never stopped. ErrNotRunning means
// the shim has already gone (or its pid now names another process, which is not signalled).
func (l *Launcher) Stop(ctx context.Context, h Handle) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("stop runner (shim pid %d): %w", h.PID, err)
	}
	if err := signalIdentified(h.PID, h.StartTime, stopAsk); err != nil {
		return fmt.Errorf("stop runner (shim pid %d): %w", h.PID, err)
	}
	return nil
}

// RemoveRuntimeDir deletes a runtime directory and everything in it. It refuses a path that is
// not strictly below the runtime root (ErrOutsideRuntimeRoot) and a directory whose runner, or
// whose shim before it recorded the exit, is still alive (ErrRunnerAlive). A directory that does
// not exist is already removed.
func (l *Launcher) RemoveRuntimeDir(ctx context.Context, dir string) error {
	abs, rootDir, err := l.inAnyRoot(dir)
	if err != nil {
		return fmt.Errorf("remove runtime directory: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("remove runtime directory %s: %w", abs, err)
	}
	if st, err := ReadShimState(abs); err == nil {
		// A shim that has recorded the exit does nothing but end, so only its runner must be gone:
		// waiting for the shim too would hold the attempt's slot for another pass.
		_, exited, _ := ExitStatus(abs)
		for i, p := range []Handle{st.Handle(), {PID: st.RunnerPID, StartTime: st.RunnerStartTime}} {
			if p.PID <= 0 || (i == 0 && exited) {
				continue
			}
			alive, err := Alive(p.PID, p.StartTime)
			if err != nil {
				return fmt.Errorf("remove runtime directory %s: %w", abs, err)
			}
			if alive {
				return fmt.Errorf("remove runtime directory %s: pid %d: %w; stop it first", abs, p.PID, ErrRunnerAlive)
			}
		}
	}
	root, err := os.OpenRoot(rootDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no runtime root yet (no runner ever started here): nothing below it to remove
	}
	if err != nil {
		return fmt.Errorf("remove runtime directory %s: open runtime root: %w", abs, err)
	}
	defer root.Close()
	rel, _ := filepath.Rel(rootDir, abs) // inAnyRoot checked it
	if err := removeIn(root, rootDir, rel); err != nil {
		return fmt.Errorf("remove runtime directory %s (check its permissions; it is retried on the next pass): %w", abs, err)
	}
	l.log.Info("removed runtime directory", "runtime_dir", abs)
	return nil
}

// RemoveWorkDir removes an attempt's own work directory <work_dir>/<attempt id> (the engine calls
// it after RemoveRuntimeDir, so the runner is gone). It refuses anything but an absolute, clean
// path ending in a plain name below a parent directory, removes through os.Root (a symlink is
// removed as a link), and reads a missing directory or parent as nothing to remove.
func RemoveWorkDir(ctx context.Context, dir string) error {
	parent, base := filepath.Split(dir)
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || !keyPart.MatchString(base) || parent == "/" {
		return fmt.Errorf("remove work directory %q: not <work_dir>/<attempt id>", dir)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("remove work directory %s: %w", dir, err)
	}
	root, err := os.OpenRoot(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove work directory %s: %w", dir, err)
	}
	defer root.Close()
	if err := removeIn(root, parent, base); err != nil {
		return fmt.Errorf("remove work directory %s (check its permissions; it is retried on the next pass): %w", dir, err)
	}
	return nil
}

// removeIn removes rel below root (opened at rootDir) and everything in it. A job may have left
// directories without write permission: they are made writable and the removal retried once.
// Where os.Root cannot remove at all (wine, removeByPath), the tree is removed by path.
func removeIn(root *os.Root, rootDir, rel string) error {
	if err := root.RemoveAll(rel); err == nil {
		return nil
	}
	makeRemovable(root, rel)
	err := root.RemoveAll(rel)
	if err != nil {
		err = removeByPath(filepath.Join(rootDir, rel), err)
	}
	return err
}

func makeRemovable(root *os.Root, rel string) {
	_ = fs.WalkDir(root.FS(), filepath.ToSlash(rel), func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = root.Chmod(filepath.FromSlash(p), 0o700)
		}
		return nil
	})
}
