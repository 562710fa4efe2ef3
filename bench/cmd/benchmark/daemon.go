package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// daemon is a bin/runner-manager daemon subprocess. Its stderr (JSON logs) goes to a file and is
// offered line by line to watchers, which is how a reload's completion is seen.
type daemon struct {
	cmd   *exec.Cmd
	ready time.Duration // from exec to "daemon running"
	done  chan struct{}

	mu       sync.Mutex
	watchers []func(line string)
}

var readyLine = regexp.MustCompile(`^daemon running \(pid (\d+)\)`)

func startDaemon(bin, cfgPath, logPath string, timeout time.Duration) (*daemon, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(bin, "runner-manager"), "daemon", "--config", cfgPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start the daemon %s: %w (run `make build` first)", cmd.Path, err)
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	var once sync.Once
	var copying sync.WaitGroup
	copying.Add(2)
	go func() {
		defer copying.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if readyLine.MatchString(sc.Text()) {
				once.Do(func() { close(ready) })
			}
		}
	}()
	go func() {
		defer copying.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			d.mu.Lock()
			ws := d.watchers
			d.mu.Unlock()
			for _, w := range ws {
				w(line)
			}
		}
	}()
	go func() {
		copying.Wait()
		_ = cmd.Wait()
		logf.Close()
		close(d.done)
	}()
	select {
	case <-ready:
		d.ready = time.Since(t0)
		return d, nil
	case <-d.done:
		return nil, fmt.Errorf("the daemon exited before it was running; see %s", logPath)
	case <-time.After(timeout):
		d.stop(5 * time.Second)
		return nil, fmt.Errorf("the daemon was not running within %s; see %s", timeout, logPath)
	}
}

// await returns a channel that receives the time of the first stderr line containing substr
// from now on.
func (d *daemon) await(substr string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	var once sync.Once
	d.mu.Lock()
	d.watchers = append(d.watchers, func(line string) {
		if strings.Contains(line, substr) {
			once.Do(func() { ch <- time.Now() })
		}
	})
	d.mu.Unlock()
	return ch
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// stop drains the daemon with SIGTERM and kills its process group if it overstays grace.
func (d *daemon) stop(grace time.Duration) error {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-d.pid(), syscall.SIGKILL)
	<-d.done
	return fmt.Errorf("the daemon (pid %d) did not stop within %s of SIGTERM and was killed", d.pid(), grace)
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
	if u.RSSKiB, err = parseVmRSS(string(status)); err != nil {
		return u, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	u.CPU, err = parseCPU(string(stat))
	return u, err
}

func parseVmRSS(status string) (int, error) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				return strconv.Atoi(f[0])
			}
		}
	}
	return 0, errors.New("no VmRSS line in /proc/<pid>/status")
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
