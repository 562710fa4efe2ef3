package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// leaks is what a run left behind after the daemon exited: anything here is a leak.
type leaks struct {
	Registrations []string  // runner names the simulator still lists
	Processes     []process // runner or shim processes still alive
	Dirs          []string  // runtime directories left under <state_dir>/runners
}

func (l leaks) count() int { return len(l.Registrations) + len(l.Processes) + len(l.Dirs) }

func (l leaks) String() string {
	var b strings.Builder
	for _, r := range l.Registrations {
		fmt.Fprintf(&b, "  leaked registration  %s (still listed by the simulator)\n", r)
	}
	for _, p := range l.Processes {
		fmt.Fprintf(&b, "  leaked process       pid %d: %s\n", p.PID, p.Cmd)
	}
	for _, d := range l.Dirs {
		fmt.Fprintf(&b, "  leaked directory     %s\n", d)
	}
	return b.String()
}

// process is a live process whose command line names a runtime directory of this run.
type process struct {
	PID int
	Cmd string
}

// findLeaks checks the three places a runner can outlive the daemon. runtimeRoot is unique to
// this run (a fresh temporary directory), so any process naming it on its command line (the shim's
// --runtime-dir, the runner's own path) belongs to this run.
func findLeaks(ctx context.Context, sim *simClient, runtimeRoot string) (leaks, error) {
	var l leaks
	s, err := sim.poll(ctx)
	if err != nil {
		return l, fmt.Errorf("count registrations left at the simulator: %w", err)
	}
	for _, r := range s.Runners {
		l.Registrations = append(l.Registrations, r.Name)
	}
	if l.Processes, err = processesNaming(ctx, runtimeRoot+string(filepath.Separator)); err != nil {
		return l, fmt.Errorf("count runner processes left: %w", err)
	}
	entries, err := os.ReadDir(runtimeRoot)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l, fmt.Errorf("count runtime directories left: %w", err)
	}
	for _, e := range entries {
		l.Dirs = append(l.Dirs, filepath.Join(runtimeRoot, e.Name()))
	}
	return l, nil
}

// awaitNoLeaks re-checks until nothing is left or the deadline passes: ephemeral runners finishing
// their last job deregister and exit on their own shortly after the daemon stops.
func awaitNoLeaks(ctx context.Context, sim *simClient, runtimeRoot string, wait time.Duration) (leaks, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := findLeaks(ctx, sim, runtimeRoot)
		if err != nil || l.count() == 0 || time.Now().After(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return l, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// processesNaming lists live processes (other than this one) whose command line contains marker,
// from /proc where there is one, else from ps.
func processesNaming(ctx context.Context, marker string) ([]process, error) {
	var out []process
	self := os.Getpid()
	add := func(pid int, cmd string) {
		if pid != self && strings.Contains(cmd, marker) {
			out = append(out, process{PID: pid, Cmd: cmd})
		}
	}
	entries, err := os.ReadDir("/proc")
	if err == nil {
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err != nil || len(raw) == 0 {
				continue // gone meanwhile, or a zombie: neither runs anything
			}
			add(pid, strings.TrimSpace(string(bytes.ReplaceAll(raw, []byte{0}, []byte{' '}))))
		}
		return out, nil
	}
	ps, err := exec.CommandContext(ctx, "ps", "-axww", "-o", "pid=,command=").Output()
	if err != nil {
		return nil, fmt.Errorf("no /proc and ps failed: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(ps))
	for sc.Scan() {
		pidText, cmd, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if pid, err := strconv.Atoi(pidText); err == nil {
			add(pid, strings.TrimSpace(cmd))
		}
	}
	return out, sc.Err()
}

// killLeftovers ends processes a failed run left behind, so the demo never leaves one running.
func killLeftovers(ps []process) {
	for _, p := range ps {
		if proc, err := os.FindProcess(p.PID); err == nil {
			_ = proc.Kill() // SIGKILL; TerminateProcess on Windows
		}
	}
}
