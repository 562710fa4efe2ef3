// Command demo is what `make demo` runs: the real runner-manager daemon against the GitHub
// simulator (bin/ghsim) with fake runners. It starts both as subprocesses in a private temporary
// directory, queues a stream of jobs, prints one line per event (queued, runner registered,
// running, done), stops the daemon and proves nothing leaked: no registration left at the
// simulator, no runner process alive, no runtime directory left. It never talks to the real
// GitHub and never edits the config it is given (it runs a rewritten copy).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Exit codes: 0 all jobs ran and nothing leaked; 1 the demo failed (a leak, a job not run, a
// process that would not start); 2 bad flags; 130 interrupted.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A closed stdout (`make demo | head`) must not kill the demo before it stops its children:
	// with SIGPIPE handled, a write just fails and the run goes on to its cleanup.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	os.Exit(runMain(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	_, err = run(ctx, o, stdout)
	switch {
	case err == nil:
		return exitOK
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "demo: interrupted; every process it started has been stopped")
		return exitInterrupted
	default:
		fmt.Fprintln(stderr, "demo:", err)
		return exitFailed
	}
}

// options are the demo's flags.
type options struct {
	Jobs     int
	Duration time.Duration // jobs are queued evenly over this long
	MinRun   time.Duration // each job runs for a random time in [MinRun, MaxRun]
	MaxRun   time.Duration
	Timeout  time.Duration // give up when the jobs have not all completed this long after the last was queued
	Config   string
	BinDir   string // holds runner-manager and ghsim
	TempDir  string // parent of the run's directory; "" = the system's
	Seed     uint64
	Keep     bool
	Quiet    bool
	LeakWait time.Duration // how long ephemeral runners get to end after the daemon exits (not a flag)
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{LeakWait: leakSettle}
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: demo [flags]  (make demo builds the binaries and runs this)")
		fs.PrintDefaults()
	}
	fs.IntVar(&o.Jobs, "jobs", 20, "number of jobs to queue")
	fs.DurationVar(&o.Duration, "duration", 20*time.Second, "queue the jobs evenly over this long")
	fs.DurationVar(&o.MinRun, "min-run", 2*time.Second, "shortest job run time")
	fs.DurationVar(&o.MaxRun, "max-run", 5*time.Second, "longest job run time")
	fs.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "fail when jobs are still unfinished this long after the last one was queued")
	fs.StringVar(&o.Config, "config", "examples/demo.toml", "config the daemon runs (a copy is rewritten to point at the simulator)")
	fs.StringVar(&o.BinDir, "bin", "bin", "directory holding the runner-manager and ghsim binaries")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the job run times; 0 picks one from the clock (the header prints it)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the run's temporary directory (logs, state, config)")
	fs.BoolVar(&o.Quiet, "quiet", false, "print only the summary, not one line per event")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var bad error
	switch {
	case fs.NArg() > 0:
		bad = fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.Jobs < 1:
		bad = errors.New("-jobs must be at least 1")
	case o.Duration < 0 || o.MinRun <= 0 || o.MaxRun < o.MinRun:
		bad = errors.New("-duration must be >= 0 and 0 < -min-run <= -max-run")
	case o.Timeout <= 0:
		bad = errors.New("-timeout must be positive")
	}
	if bad != nil {
		fmt.Fprintln(stderr, "demo:", bad)
		fs.Usage()
	}
	return o, bad
}
