package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// child is one subprocess of the demo (the simulator or the daemon). Its output goes to a log
// file; lines of its stdout are also offered to watch, which the daemon's readiness is read from.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and its output is drained
	err  error         // the exit error, valid once done is closed
}

// startChild starts path with args, appending stdout and stderr to logPath. watch (may be nil) is
// called with each stdout line from one goroutine, which ends when the process's output does.
// The child gets its own process group so a terminal's Ctrl-C reaches only the demo, which then
// stops its children in order.
func startChild(name, path string, args []string, logPath string, watch func(line string)) (*child, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start %s: open its log: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin = nil
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, path, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	var copying sync.WaitGroup
	copying.Add(1)
	go func() {
		defer copying.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if watch != nil {
				watch(line)
			}
		}
		_, _ = io.Copy(logf, stdout) // a line too long for the scanner: keep the rest in the log
	}()
	go func() {
		copying.Wait() // Wait closes the pipe: read it to the end first
		c.err = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// exited reports whether the process has ended.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends sig, waits up to grace for the exit, then kills the process group. It returns the
// process's exit error, or an error saying it had to be killed.
func (c *child) stop(sig syscall.Signal, grace time.Duration) error {
	if c.exited() {
		return c.err
	}
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
		return c.err
	case <-time.After(grace):
	}
	_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
	<-c.done
	return fmt.Errorf("%s (pid %d) did not exit within %s of %s and was killed", c.name, c.pid(), grace, sig)
}

// readyLine matches the line the daemon prints once it runs.
var readyLine = regexp.MustCompile(`^daemon running \(pid (\d+)\)`)

// await waits for ready to close, for the process to exit, for the timeout or for ctx.
func (c *child) await(ctx context.Context, ready <-chan struct{}, timeout time.Duration, what string) error {
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return fmt.Errorf("%s exited before %s: %v", c.name, what, c.err)
	case <-time.After(timeout):
		return errors.New(c.name + " did not report " + what + " within " + timeout.String())
	}
}
