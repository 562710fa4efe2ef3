package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/bench"
	"github.com/runner-manager/runner-manager/internal/dockerd"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/runner/runnerusertest"
)

// containerRun is one executor's row of figure 14 (issue 27 item 7): jobs queued on one webhook
// target, all running at once, with host runners (the shim, per-slot users) or container runners
// (executor = "container" on a private dockerd, image_pull = "never", network = "host").
type containerRun struct {
	Executor  string
	Jobs      int
	JobRun    time.Duration
	Latencies []time.Duration
	// Busy is how many jobs were in progress at once when RSS was read (Jobs when all overlapped).
	Busy                 int
	DaemonRSS, EngineRSS int // KiB with Busy runners: the daemon; dockerd + containerd + shims
	// DaemonCPU is the daemon's CPU time from the first job queued to the last one done;
	// SupportCPU that of the processes that supervise runners: runner-manager shims (host), or
	// dockerd, containerd and the containerd shims (container). The runners' own CPU is in neither.
	DaemonCPU, SupportCPU time.Duration
	Left, Killed          int
}

// containerImage is the runner image of the container runs: busybox only, since the daemon mounts
// the verified runner package (runner_in_image = false).
const containerImage = "rm-bench/runner:1"

// runContainers measures both executors, host first, on one private dockerd started here.
func (e env) runContainers(jobs int, spacing, jobRun time.Duration) ([]containerRun, error) {
	dk, err := dockerd.Start(dockerd.Options{})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := dk.Stop(); err != nil {
			e.log("  stop the private dockerd: %v", err)
		}
		if err := runnerusertest.Sweep(); err != nil {
			e.log("  remove the slot users: %v", err)
		}
	}()
	root := filepath.Join(e.dir, "container-root")
	if err := dockerd.BusyboxRoot(root); err != nil {
		return nil, err
	}
	if _, err := dk.ImportRoot(root, containerImage, `CMD ["/bin/sh"]`); err != nil {
		return nil, err
	}
	var out []containerRun
	for _, executor := range []string{"host", "container"} {
		e.log("  %s runners: %d jobs every %s, each running %s", executor, jobs, spacing, jobRun)
		r, err := e.runExecutor(executor, dk, jobs, spacing, jobRun)
		if err != nil {
			return out, fmt.Errorf("%s runners: %w", executor, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (e env) runExecutor(executor string, dk *dockerd.Daemon, jobs int, spacing, jobRun time.Duration) (containerRun, error) {
	r := containerRun{Executor: executor, Jobs: jobs, JobRun: jobRun}
	dir, w, err := e.setup("executor-"+executor, 1)
	if err != nil {
		return r, err
	}
	defer w.close()
	// Slot users pass through to their runtime directories, under the state dir's parent.
	for _, d := range []string{e.dir, dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			return r, err
		}
	}
	s := bench.Setup{StateDir: filepath.Join(dir, "state"), APIURL: w.frontURL, TokenFile: w.tokenFile, Targets: 1,
		HostMax: jobs, TargetMax: jobs, PollInterval: 10 * time.Minute, IdleTimeout: 30 * time.Second, SlotPrefix: runnerusertest.Prefix()}
	support := []string{s.StateDir}
	if executor == "container" {
		s.Container.Image, s.Container.Network, s.Container.DockerHost = containerImage, "host", dk.Host
		support = []string{dk.Dir}
	}
	d, err := e.startWith(dir, w, s, true)
	if err != nil {
		return r, err
	}
	defer func() { r.Left, r.Killed = e.stopAndSweep(d, w, s.StateDir) }()
	cpu := newCPUWatch(d.PID(), support)
	defer cpu.stop()
	ids, err := w.queueJobs(jobs, "bench", spacing, jobRun, repoOne)
	if err != nil {
		return r, err
	}
	// RSS when every job is in progress (jobRun outlasts the queueing and the launches).
	err = waitFor(jobRun, func() bool { return allJobs(w.sim, ids, func(j ghsim.Job) bool { return !j.StartedAt.IsZero() }) })
	for _, id := range ids {
		if j, ok := w.sim.Job(id); ok && !j.StartedAt.IsZero() && j.Status != ghsim.StatusCompleted {
			r.Busy++
		}
	}
	if u, uerr := readUsage(d.PID()); uerr == nil {
		r.DaemonRSS = u.RSSKiB
	}
	if executor == "container" {
		r.EngineRSS = rssOf(matching(dk.Dir))
	}
	if err != nil {
		return r, fmt.Errorf("not every job started within %s: %w", jobRun, err)
	}
	if err := waitFor(jobRun+2*time.Minute, func() bool { return allJobs(w.sim, ids, done) }); err != nil {
		return r, fmt.Errorf("the jobs did not end: %w", err)
	}
	r.Latencies = latencies(w.sim, ids)
	r.DaemonCPU, r.SupportCPU = cpu.stop()
	return r, nil
}

// cpuWatch samples, every 100 ms, the CPU time of the daemon and of every process whose command
// line names one of the support paths (shims and the Engine come and go: each is counted at its
// last sample, so a shim that ended between two samples loses at most 100 ms of its time).
type cpuWatch struct {
	mu      sync.Mutex
	daemon  int
	last    map[int]time.Duration // pid -> CPU at its last sample
	base    map[int]time.Duration // pid -> CPU when the watch began (those alive then)
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	support []string
}

func newCPUWatch(daemon int, support []string) *cpuWatch {
	c := &cpuWatch{daemon: daemon, last: map[int]time.Duration{}, base: map[int]time.Duration{}, quit: make(chan struct{}), done: make(chan struct{}), support: support}
	c.sample(true)
	go func() {
		defer close(c.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-c.quit:
				c.sample(false)
				return
			case <-t.C:
				c.sample(false)
			}
		}
	}()
	return c
}

func (c *cpuWatch) sample(first bool) {
	pids := append(matching(c.support...), c.daemon)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, pid := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		cpu, err := parseCPU(string(stat))
		if err != nil {
			continue
		}
		c.last[pid] = cpu
		if first {
			c.base[pid] = cpu
		}
	}
}

// stop ends the watch and returns the daemon's CPU and the support processes' since it began.
func (c *cpuWatch) stop() (daemon, support time.Duration) {
	c.once.Do(func() { close(c.quit); <-c.done })
	c.mu.Lock()
	defer c.mu.Unlock()
	for pid, cpu := range c.last {
		d := cpu - c.base[pid]
		if pid == c.daemon {
			daemon += d
		} else {
			support += d
		}
	}
	return daemon, support
}

// matching lists the processes whose command line contains one of paths, except the runners
// themselves (the fake runner and its run.sh, whose paths name the runtime directory).
func matching(paths ...string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		line := string(cmd)
		if strings.Contains(line, "Runner.Listener") || strings.Contains(line, "run.sh") {
			continue
		}
		for _, p := range paths {
			if strings.Contains(line, p) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// rssOf sums the resident memory of pids.
func rssOf(pids []int) int {
	total := 0
	for _, pid := range pids {
		if u, err := readUsage(pid); err == nil {
			total += u.RSSKiB
		}
	}
	return total
}

func (r results) renderContainers(p printer) {
	p("## 14. Container runners against host runners: latency, launch cost, memory\n\n")
	p("One repository target in webhook mode, its jobs queued one after the other and each running long enough\n")
	p("for all of them to be in progress at once; the same run with host runners (the shim, one per-slot user\n")
	p("each) and with container runners (`executor = \"container\"`, a private dockerd started by the benchmark\n")
	p("with `--iptables=false --bridge=none`, a busybox image imported locally, `image_pull = \"never\"`,\n")
	p("`network = \"host\"`, the verified runner package mounted). Latency is queued -> in progress as the\n")
	p("simulator stamps it. Launch cost is CPU time per job from the first job queued to the last one done:\n")
	p("the daemon's, and that of what supervises the runners (the runner-manager shims; or dockerd, containerd\n")
	p("and the containerd shims), sampled every 100 ms; the runners' own CPU is in neither. RSS is read\n")
	p("while the jobs are in progress.\n\n")
	p("| executor | jobs (in progress at once) | latency p50 | p90 | max | daemon CPU per job | supervision CPU per job | daemon RSS | dockerd + containerd + shims RSS | left after stop | command |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Containers {
		n := time.Duration(max(c.Jobs, 1))
		engine := "—"
		if c.Executor == "container" {
			engine = fmt.Sprintf("%.1f MiB", float64(c.EngineRSS)/1024)
		}
		p("| %s | %d (%d) | %s | %s | %s | %d ms | %d ms | %.1f MiB | %s | %d registrations, %d processes | `%s -only containers` |\n",
			c.Executor, c.Jobs, c.Busy, secs(percentile(c.Latencies, 50)), secs(percentile(c.Latencies, 90)), secs(percentile(c.Latencies, 100)),
			(c.DaemonCPU / n).Milliseconds(), (c.SupportCPU / n).Milliseconds(), float64(c.DaemonRSS)/1024, engine, c.Left, c.Killed, r.self())
	}
	p("\nIt needs root and Debian's docker.io (`make e2e-tools`); the private dockerd and the slot users it makes\n")
	p("are removed at the end. `-container-jobs` and `-container-job-run` change the load.\n\n")
}
