package daemonproc

import (
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/runner-manager/runner-manager/internal/readiness"
)

// DaemonSpec describes one `runner-manager daemon --config Config Args...` process.
type DaemonSpec struct {
	Bin    string   // the runner-manager binary
	Config string   // --config
	Args   []string // further flags: --upgrade-source S, ...
	Env    []string // nil: this process's environment
	// Stdout and Stderr receive the daemon's output as written; nil discards.
	Stdout, Stderr io.Writer
	// OnLine, when set, sees every line of either stream (see Spec.OnLine).
	OnLine func(s Stream, line string)
}

// Daemon is a daemon process that reported ready.
type Daemon struct {
	*Child
	ReadyPID int           // the pid its ready line names
	Ready    time.Duration // from exec to the ready line
}

// StartDaemon starts the daemon and waits, up to timeout, for its ready line (readiness.ParseDaemon,
// on either stream). A daemon that exits first, or is not ready in time, is an error; one still
// running then is stopped (SIGTERM, then killed).
func StartDaemon(ctx context.Context, spec DaemonSpec, timeout time.Duration) (*Daemon, error) {
	ready := make(chan int, 1)
	var once sync.Once
	t0 := time.Now()
	c, err := Start(Spec{
		Name: "the daemon", Path: spec.Bin, Env: spec.Env, Stdout: spec.Stdout, Stderr: spec.Stderr,
		Args: append([]string{"daemon", "--config", spec.Config}, spec.Args...),
		OnLine: func(s Stream, line string) {
			if spec.OnLine != nil {
				spec.OnLine(s, line)
			}
			if pid, ok := readiness.ParseDaemon(line); ok {
				once.Do(func() { ready <- pid })
			}
		},
	})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Daemon, error) {
		_ = c.Stop(syscall.SIGTERM, 10*time.Second)
		return nil, err
	}
	select {
	case pid := <-ready:
		return &Daemon{Child: c, ReadyPID: pid, Ready: time.Since(t0)}, nil
	case <-c.Done():
		select {
		case pid := <-ready: // printed just before it exited
			return &Daemon{Child: c, ReadyPID: pid, Ready: time.Since(t0)}, nil
		default:
		}
		return nil, fmt.Errorf("the daemon exited with code %d before it was running", c.ExitCode())
	case <-ctx.Done():
		return fail(ctx.Err())
	case <-time.After(timeout):
		return fail(fmt.Errorf("the daemon did not report that it runs within %s", timeout))
	}
}

// StartSim starts the simulator binary (cmd/ghsim) with args and waits, up to timeout, for its ready
// line; it returns the child and the URL it serves at. out (may be nil) receives both streams.
func StartSim(ctx context.Context, bin string, args []string, out io.Writer, timeout time.Duration) (*Child, string, error) {
	urls := make(chan string, 1)
	var once sync.Once
	c, err := Start(Spec{Name: "the simulator", Path: bin, Args: args, Stdout: out, Stderr: out,
		OnLine: func(_ Stream, line string) {
			if u, ok := readiness.ParseSim(line); ok {
				once.Do(func() { urls <- u })
			}
		}})
	if err != nil {
		return nil, "", err
	}
	select {
	case u := <-urls:
		return c, u, nil
	case <-c.Done():
		return nil, "", fmt.Errorf("the simulator exited with code %d before it served", c.ExitCode())
	case <-ctx.Done():
		_ = c.Stop(syscall.SIGTERM, 5*time.Second)
		return nil, "", ctx.Err()
	case <-time.After(timeout):
		_ = c.Stop(syscall.SIGTERM, 5*time.Second)
		return nil, "", fmt.Errorf("the simulator did not report its URL within %s", timeout)
	}
}
