package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// child is one subprocess of the demo (the simulator or the daemon). Its output goes to a log
// file; lines of its stdout are also offered to watch, which the daemon's readiness is read from.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and its stdout is drained (or WaitDelay passed)
	err  error         // the exit error, valid once done is closed
}

// startChild starts path with args, appending stdout and stderr to logPath. watch (may be nil) is
// called with each stdout line, from exec's copying goroutine.
// The child gets its own process group so a terminal's Ctrl-C reaches only the demo, which then
// stops its children in order.
func startChild(name, path string, args []string, logPath string, watch func(line string)) (*child, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start %s: open its log: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout = &lineWriter{log: logf, watch: watch}
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A grandchild that inherited stdout (and outlived its parent) must not hold Wait forever.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, path, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	return c, nil
}

// lineWriter copies a child's stdout into its log and hands each complete line to watch.
// exec.Cmd writes to it from one goroutine.
type lineWriter struct {
	log     io.Writer
	watch   func(line string)
	partial []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	if _, err := w.log.Write(p); err != nil {
		return 0, err
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		if w.watch != nil {
			w.watch(string(w.partial[:i]))
		}
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > 64<<10 {
		w.partial = w.partial[:0] // a runaway line is in the log; no ready line is that long
	}
	return len(p), nil
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

// cliOutput runs the runner-manager CLI once (--version, status) and returns its stdout.
func cliOutput(ctx context.Context, binDir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "runner-manager"), args...).Output()
	if err != nil {
		return "", fmt.Errorf("runner-manager %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// statusView is the head of `runner-manager status` (daemon, config, capacity, targets), without
// the recent events the live view has already shown.
func statusView(ctx context.Context, binDir, configPath string) string {
	out, err := cliOutput(ctx, binDir, "status", "--config", configPath)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	head, _, _ := strings.Cut(out, "RECENT EVENTS")
	var b strings.Builder
	for line := range strings.Lines(strings.TrimSpace(head)) {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return b.String()
}

// logTail quotes the last n lines of a child's log for an error message: why it failed to start
// is usually there.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return "its log " + path + " is empty"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	return "the end of " + path + ":\n    " + strings.Join(lines, "\n    ")
}
