package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runner-manager/runner-manager/internal/daemonproc"
)

// daemon is a bin/runner-manager daemon subprocess (started by internal/daemonproc). Its output
// goes to a file; its log lines are offered to watchers, which is how a reload's completion is seen.
type daemon struct {
	*daemonproc.Daemon
}

func startDaemon(bin, cfgPath, logPath string, timeout time.Duration) (*daemon, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	d, err := daemonproc.StartDaemon(context.Background(), daemonproc.DaemonSpec{
		Bin: filepath.Join(bin, "runner-manager"), Config: cfgPath, Stdout: logf, Stderr: logf}, timeout)
	if err != nil {
		logf.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w (run `make build` first)", err)
		}
		return nil, fmt.Errorf("%w; see %s", err, logPath)
	}
	go func() { <-d.Done(); logf.Close() }()
	return &daemon{d}, nil
}

// await returns a channel that receives the time of the first log line containing substr
// from now on.
func (d *daemon) await(substr string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	var once sync.Once
	d.Watch(func(s daemonproc.Stream, line string) {
		if s == daemonproc.Stderr && strings.Contains(line, substr) {
			once.Do(func() { ch <- time.Now() })
		}
	})
	return ch
}

// stop drains the daemon with SIGTERM and kills its process group if it overstays grace.
func (d *daemon) stop(grace time.Duration) error {
	err := d.Stop(syscall.SIGTERM, grace)
	if err != nil && d.ExitCode() == -1 {
		return err // killed after the grace period
	}
	return nil // an exit code is the daemon's own business here; its log has the reason
}

// usage is one reading of a process's resident memory and consumed CPU time.
type usage struct {
	At     time.Time
	RSSKiB int
	CPU    time.Duration // utime + stime
}

// clockTicks is USER_HZ, which Linux fixes at 100 for the /proc interface on every architecture
// Go supports.
const clockTicks = 100

func readUsage(pid int) (usage, error) {
	u := usage{At: time.Now()}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	if u.RSSKiB, err = statusKiB(string(status), "VmRSS:"); err != nil {
		return u, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	u.CPU, err = parseCPU(string(stat))
	return u, err
}

// statusKiB reads one "Name:   123 kB" line of /proc/<pid>/status (name with its colon).
func statusKiB(status, name string) (int, error) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			if f := strings.Fields(rest); len(f) == 2 && f[1] == "kB" {
				return strconv.Atoi(f[0])
			}
		}
	}
	return 0, fmt.Errorf("no %s line in /proc/<pid>/status", name)
}

// parseCPU reads utime and stime (fields 14 and 15) of /proc/<pid>/stat; the command name
// (field 2) may hold spaces, so fields are counted after its closing parenthesis.
func parseCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("unreadable /proc/<pid>/stat")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, errors.New("short /proc/<pid>/stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/<pid>/stat utime/stime: %w", err)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}
