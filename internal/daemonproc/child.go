// Package daemonproc starts runner-manager's own programs (the daemon, the simulator) as child
// processes for the e2e harness, the upgrade tests, the demo and the benchmarks: one way to build
// the binary, one way to start a child and copy its output, one wait for readiness (the lines
// internal/readiness defines). It is tooling around the product, never part of it: the daemon does
// not import it.
package daemonproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Stream names the output stream a line came from.
type Stream int

const (
	Stdout Stream = iota
	Stderr
)

// Spec describes one child process.
type Spec struct {
	Name string // for messages: "the daemon", "the simulator"
	Path string
	Args []string
	Env  []string // nil: this process's environment
	// Stdout and Stderr receive the child's output as written (log files, usually); nil discards.
	Stdout, Stderr io.Writer
	// OnLine, when set, is called with each complete line of either stream, from the goroutine
	// copying that stream (so calls for one stream are ordered; the two streams interleave).
	OnLine func(s Stream, line string)
}

// Child is one started process. It runs in its own process group (on Windows, also in a job
// object of its own), so a terminal's Ctrl-C reaches only the parent, which stops its children in
// order, and Stop can kill what the child started.
type Child struct {
	name string
	cmd  *exec.Cmd
	grp  group
	done chan struct{} // closed once the process exited and its output is copied (or WaitDelay passed)

	mu   sync.Mutex
	err  error // the exit error, valid once done is closed
	code int   // exit code once done; -1 when a signal ended it

	watchMu  sync.Mutex
	watchers []func(Stream, string)
}

// Start starts the process described by spec.
func Start(spec Spec) (*Child, error) {
	c := &Child{name: spec.Name, done: make(chan struct{})}
	if spec.OnLine != nil {
		c.watchers = append(c.watchers, spec.OnLine)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = spec.Env
	cmd.Stdout = &lineWriter{out: spec.Stdout, stream: Stdout, watch: c.offer}
	cmd.Stderr = &lineWriter{out: spec.Stderr, stream: Stderr, watch: c.offer}
	cmd.SysProcAttr = groupAttr()
	// A grandchild that inherited stdout (a runner outliving its daemon) must not hold Wait forever.
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Start()
	if err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Path, err)
	}
	c.cmd = cmd
	if c.grp, err = joinGroup(cmd.Process); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Path, err)
	}
	go func() {
		err := cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		if err != nil && code == 0 {
			code = -1
		}
		c.mu.Lock()
		c.err, c.code = err, code
		c.grp.close() // under mu: Stop's kill never sees a closed job handle
		c.grp = group{}
		c.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

// Watch adds a line watcher from now on (lines already copied are not replayed).
func (c *Child) Watch(f func(Stream, string)) {
	c.watchMu.Lock()
	c.watchers = append(c.watchers, f)
	c.watchMu.Unlock()
}

func (c *Child) offer(s Stream, line string) {
	c.watchMu.Lock()
	ws := c.watchers
	c.watchMu.Unlock()
	for _, w := range ws {
		w(s, line)
	}
}

// PID is the child's process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Done is closed once the process has exited and its output is copied.
func (c *Child) Done() <-chan struct{} { return c.done }

// Exited reports whether the process has ended.
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Err is the process's exit error (nil for exit 0); meaningful once Done is closed.
func (c *Child) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// ExitCode is the process's exit code, -1 when a signal ended it; meaningful once Done is closed.
func (c *Child) ExitCode() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.code
}

// Signal sends sig to the process (not its group). A process that already exited is no error.
func (c *Child) Signal(sig os.Signal) error {
	if err := c.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s to %s (pid %d): %w", sig, c.name, c.PID(), err)
	}
	return nil
}

// Kill SIGKILLs the process alone (runners live in sessions of their own and survive it) and
// waits for it to be gone.
func (c *Child) Kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// Wait waits up to timeout (or ctx) for the process to exit and returns its exit code.
func (c *Child) Wait(ctx context.Context, timeout time.Duration) (int, error) {
	select {
	case <-c.done:
		return c.ExitCode(), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(timeout):
		return 0, fmt.Errorf("%s (pid %d) did not exit within %s", c.name, c.PID(), timeout)
	}
}

// Stop sends sig, waits up to grace for the exit, then kills the process group. It returns the
// process's exit error, or an error saying it had to be killed.
func (c *Child) Stop(sig syscall.Signal, grace time.Duration) error {
	if c.Exited() {
		return c.Err()
	}
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
		return c.Err()
	case <-time.After(grace):
	}
	c.mu.Lock()
	c.grp.kill()
	c.mu.Unlock()
	<-c.done
	return fmt.Errorf("%s (pid %d) did not exit within %s of %s and was killed", c.name, c.PID(), grace, sig)
}

// lineWriter copies one stream to out and hands each complete line to watch. exec.Cmd writes to
// it from one goroutine.
type lineWriter struct {
	out     io.Writer
	stream  Stream
	watch   func(Stream, string)
	partial []byte
}

// maxLine bounds a line held for watchers; a longer one is still copied to out in full.
const maxLine = 1 << 20

func (w *lineWriter) Write(p []byte) (int, error) {
	if w.out != nil {
		if _, err := w.out.Write(p); err != nil {
			return 0, err
		}
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.watch(w.stream, string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > maxLine {
		w.partial = w.partial[:0]
	}
	return len(p), nil
}
