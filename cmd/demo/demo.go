package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runner-manager/runner-manager/internal/daemonproc"
	"github.com/runner-manager/runner-manager/internal/runner"
)

const (
	pollEvery      = 250 * time.Millisecond
	simStartBound  = 3 * time.Minute  // the first start builds the fake runner with go build
	daemonReady    = 1 * time.Minute  // journal open, lock, first config load
	leakSettle     = 20 * time.Second // ephemeral runners finishing after the daemon stopped
	pollErrorLimit = 20               // consecutive failed polls (5 s) before giving up
)

// paths are the files of one run, all below its own temporary directory.
type paths struct {
	dir, state, runtimeRoot, token, pkg, config, simLog, daemonLog string
}

func newPaths(dir string) paths {
	state := filepath.Join(dir, "state")
	return paths{dir: dir, state: state, runtimeRoot: runner.RuntimeRootFor(state), token: filepath.Join(dir, "token"),
		pkg: filepath.Join(dir, "runner-package"), config: filepath.Join(dir, "demo.toml"),
		simLog: filepath.Join(dir, "ghsim.log"), daemonLog: filepath.Join(dir, "daemon.log")}
}

// run is the whole demo. It returns the result whenever it got far enough to have one; an error
// means the demo failed (or was interrupted) and says why. Every process it started is stopped
// before it returns.
func run(ctx context.Context, o options, out io.Writer) (res result, err error) {
	dir, err := os.MkdirTemp(o.TempDir, "runner-manager-demo-")
	if err != nil {
		return res, fmt.Errorf("create the demo's temporary directory: %w", err)
	}
	p := newPaths(dir)
	defer func() {
		if o.Keep || (err != nil && ctx.Err() == nil) {
			fmt.Fprintf(out, "kept %s (config, logs, state) for inspection\n", dir)
			return
		}
		if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
			err = fmt.Errorf("remove the demo's temporary directory: %w", rerr)
		}
	}()
	live := out
	if o.Quiet {
		live = io.Discard
	}

	fmt.Fprintln(out, "starting the simulator (its first start builds the fake runner) and the daemon...")
	sim, simURL, err := startSim(ctx, o, p)
	if err != nil {
		return res, err
	}
	defer stopChild(sim, syscall.SIGTERM, 5*time.Second)
	client := newSimClient(simURL)

	cfg, err := demoConfig(o.Config, p.config, simURL, p.state, p.token)
	if err != nil {
		return res, err
	}
	targets, err := demoTargets(cfg)
	if err != nil {
		return res, err
	}
	repos := make([]string, 0, len(targets))
	for _, t := range targets {
		if err := client.createRepo(ctx, t.Repo); err != nil {
			return res, fmt.Errorf("create %s at the simulator: %w", t.Repo, err)
		}
		repos = append(repos, t.Repo)
	}
	res.MaxRunners = cfg.Daemon.MaxRunners

	daemonOut := &lineLog{}
	daemon, err := startDaemon(ctx, o, p, daemonOut)
	if err != nil {
		return res, err
	}
	// On any early return (a failure, Ctrl-C) the daemon is stopped the way an operator would, and
	// what it leaves running is killed: the demo leaves no process behind.
	drainBound := cfg.Daemon.ShutdownDrainTimeout.D() + 10*time.Second
	defer func() {
		if !daemon.Exited() {
			fmt.Fprintf(out, "stopping the daemon (pid %d): its drain takes up to %s\n", daemon.PID(), cfg.Daemon.ShutdownDrainTimeout.D())
		}
		stopChild(daemon, syscall.SIGTERM, drainBound)
		if ps, perr := processesNaming(context.WithoutCancel(ctx), p.runtimeRoot+string(filepath.Separator)); perr == nil {
			killLeftovers(ps)
		}
	}()

	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	fmt.Fprintf(out, "runner-manager demo: %d jobs over %s on %s (max_runners %d, -seed %d)\n",
		o.Jobs, o.Duration, strings.Join(repos, ", "), res.MaxRunners, o.Seed)
	fmt.Fprintf(out, "  simulator  %s  log %s\n", simURL, p.simLog)
	version, verr := cliOutput(ctx, o.BinDir, "--version")
	if verr != nil {
		version = verr.Error()
	}
	fmt.Fprintf(out, "  daemon     pid %d (%s)  log %s\n", daemon.PID(), version, p.daemonLog)
	fmt.Fprintf(out, "  config     %s (from %s)\n\n", p.config, o.Config)

	plan := planJobs(targets, o.Jobs, o.Duration, o.MinRun, o.MaxRun, rand.New(rand.NewPCG(o.Seed, 0)))
	tr := newTracker()
	ids, streamErr := stream(ctx, o, client, daemon, plan, tr, live)
	res.fill(tr, ids)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}

	// Stop the daemon as an operator would, then look for anything left behind. A stream that
	// failed (jobs never picked up, the daemon gone) still gets its leak check and summary.
	if !o.Quiet && !daemon.Exited() {
		fmt.Fprintf(live, "\nthe daemon's own view (runner-manager status --config %s):\n%s\n\n", p.config, statusView(ctx, o.BinDir, p.config))
	}
	fmt.Fprintf(live, "%s  %-8s SIGTERM to the daemon (pid %d)\n", time.Now().Format("15:04:05"), "stop", daemon.PID())
	res.DaemonErr = stopWatching(ctx, daemon, drainBound, client, tr, live)
	res.DaemonSaid = daemonOut.last("daemon stopped")
	if res.DaemonSaid != "" {
		fmt.Fprintf(live, "%s  %-8s %s\n", time.Now().Format("15:04:05"), "stop", res.DaemonSaid)
	}
	res.Leaks, err = awaitNoLeaks(ctx, client, p.runtimeRoot, o.LeakWait)
	if s, perr := client.poll(ctx); perr == nil {
		printEvents(live, tr.observe(s, time.Now())) // removals seen while waiting
	}
	res.fill(tr, ids)
	if err != nil {
		return res, err
	}
	printSummary(out, res)
	return res, errors.Join(streamErr, res.failure())
}

// stream queues the planned jobs on time and prints events until every job has completed.
// It returns the ids of the jobs it queued.
func stream(ctx context.Context, o options, sim *simClient, daemon *daemonproc.Child, plan []plannedJob, tr *tracker, live io.Writer) ([]int64, error) {
	start := time.Now()
	ids := make([]int64, 0, len(plan))
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	failedPolls := 0
	for {
		for len(ids) < len(plan) && time.Since(start) >= plan[len(ids)].At {
			id, err := sim.queueJob(ctx, plan[len(ids)])
			if err != nil {
				return ids, fmt.Errorf("queue job %d of %d: %w", len(ids)+1, len(plan), err)
			}
			ids = append(ids, id)
		}
		s, err := sim.poll(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return ids, ctx.Err()
		case err != nil:
			if failedPolls++; failedPolls >= pollErrorLimit {
				return ids, fmt.Errorf("the simulator stopped answering: %w", err)
			}
		default:
			failedPolls = 0
			printEvents(live, tr.observe(s, time.Now()))
		}
		if len(ids) == len(plan) && tr.done(ids) {
			return ids, nil
		}
		if daemon.Exited() {
			return ids, fmt.Errorf("the daemon exited while jobs were waiting (%v); see its log (path above)", daemon.Err())
		}
		if last := start.Add(plan[len(plan)-1].At); len(ids) == len(plan) && time.Since(last) > o.Timeout {
			return ids, fmt.Errorf("%d of %d jobs still not completed %s after the last was queued; see the daemon's log",
				len(ids)-tr.completed(ids), len(ids), o.Timeout)
		}
		select {
		case <-ctx.Done():
			return ids, ctx.Err()
		case <-tick.C:
		}
	}
}

// stopWatching sends SIGTERM to the daemon and keeps printing events (idle runners deregistered
// by its drain) until it has exited; it returns how the process ended.
func stopWatching(ctx context.Context, daemon *daemonproc.Child, grace time.Duration, sim *simClient, tr *tracker, live io.Writer) error {
	stopped := make(chan error, 1)
	go func() { stopped <- daemon.Stop(syscall.SIGTERM, grace) }()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-stopped:
			return err
		case <-tick.C:
			if s, err := sim.poll(ctx); err == nil {
				printEvents(live, tr.observe(s, time.Now()))
			}
		}
	}
}

func printEvents(w io.Writer, evs []event) {
	for _, e := range evs {
		fmt.Fprintln(w, e)
	}
}

// startSim starts bin/ghsim on a free loopback port with a token file and the fake runner
// package, and returns it with its URL once it serves.
func startSim(ctx context.Context, o options, p paths) (*daemonproc.Child, string, error) {
	logf, err := os.OpenFile(p.simLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("start the simulator: open its log: %w", err)
	}
	sim, url, err := daemonproc.StartSim(ctx, filepath.Join(o.BinDir, "ghsim"),
		[]string{"--listen", "127.0.0.1:0", "--login", "demo", "--token-file", p.token, "--runner-package", p.pkg},
		logf, simStartBound)
	if err != nil {
		logf.Close()
		return nil, "", fmt.Errorf("%w%s; %s", err, buildHint(err), logTail(p.simLog, 5))
	}
	go func() { <-sim.Done(); logf.Close() }()
	return sim, url, nil
}

// startDaemon starts `runner-manager daemon` and waits until it reports that it runs.
func startDaemon(ctx context.Context, o options, p paths, said *lineLog) (*daemonproc.Child, error) {
	logf, err := os.OpenFile(p.daemonLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start the daemon: open its log: %w", err)
	}
	d, err := daemonproc.StartDaemon(ctx, daemonproc.DaemonSpec{
		Bin: filepath.Join(o.BinDir, "runner-manager"), Config: p.config, Stdout: logf, Stderr: logf,
		OnLine: func(_ daemonproc.Stream, line string) { said.add(logMessage(line)) },
	}, daemonReady)
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("%w%s; %s", err, buildHint(err), logTail(p.daemonLog, 5))
	}
	go func() { <-d.Done(); logf.Close() }()
	return d.Child, nil
}

// buildHint says what to do when a binary is missing.
func buildHint(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return " (run `make build` first, or pass -bin)"
	}
	return ""
}

// stopChild stops c if it is still running; the reason it had to be killed is in its log.
func stopChild(c *daemonproc.Child, sig syscall.Signal, grace time.Duration) {
	if c != nil {
		_ = c.Stop(sig, grace)
	}
}

// lineLog keeps the daemon's stdout lines (a handful: readiness and the exit summary).
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

// logMessage is the message of one of the daemon's JSON log lines (its format off a terminal),
// or the line itself.
func logMessage(line string) string {
	var rec struct{ Msg string }
	if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg != "" {
		return rec.Msg
	}
	return line
}

// last returns the last line starting with prefix, or "".
func (l *lineLog) last(prefix string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(l.lines[i], prefix) {
			return l.lines[i]
		}
	}
	return ""
}

// errLeaked names the leak in the demo's failure message, as the summary does.
var errLeaked = errors.New("runners leaked")
