package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/runner-manager/runner-manager/bench"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/livetest"
	"github.com/runner-manager/runner-manager/internal/runner"
)

// scaleUp is figure 1 (and the "under load" half of figure 2): jobs queued one by one against one
// target, latency from the job's created_at to its started_at as the simulator records them.
type scaleUp struct {
	Mode      string // "poll" or "webhook"
	Poll      time.Duration
	IdleFirst bool          // the burst came once the repository was idle (read every idle_poll_interval)
	InForce   time.Duration // poll mode: the interval in force when the burst came (the bound of a job's wait, plus a tenth)
	Jobs      int
	Spacing   time.Duration
	JobRun    time.Duration
	Latencies []time.Duration
	PerSecond []int // requests in each second of Window (the requests-per-minute figure)
	Window    time.Duration
	Req       counts
	Budget    int
	Left      int // registrations still listed after the daemon stopped
	Killed    int // runner processes still alive after the daemon stopped (killed by the benchmark)
}

// idle is figures 2 (idle) and 3: n idle targets, measured over a window after a warm-up.
type idle struct {
	Targets        int
	Poll           time.Duration
	Warmup, Window time.Duration
	ReadyIn        time.Duration
	RSSStart       int // KiB
	RSSEnd, RSSMax int
	CPU            time.Duration // consumed in the window
	RSSSeries      []int         // KiB, every second of the window (the RSS-over-time figure)
	PerSecond      []int         // requests in each second of the window
	Req            counts
	Budget         int
	Reload         *daemonReload
}

// daemonReload is a one-target edit of the file the idle daemon runs.
type daemonReload struct {
	Took          time.Duration // file renamed into place -> "config reloaded" logged
	After         counts        // requests in AfterWindow after the edit
	AfterWindow   time.Duration
	IdleSameSpan  float64 // requests the idle rate predicts for AfterWindow
	Generation    string
	ReloadTimeout bool
}

type env struct {
	bin string
	dir string
	pkg ghsim.Package
	log func(format string, args ...any)
}

func (e env) setup(name string, repos int) (string, *world, error) {
	return e.setupWith(name, repos, ghsim.Options{})
}

func (e env) setupWith(name string, repos int, opts ghsim.Options) (string, *world, error) {
	dir := filepath.Join(e.dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	w, err := newWorld(context.Background(), dir, repos, e.pkg, opts)
	return dir, w, err
}

// startIn writes s as dir/config.toml and starts the daemon on it (log in dir/daemon.log).
func (e env) startIn(dir string, s bench.Setup, timeout time.Duration) (*daemon, error) {
	cfgPath := filepath.Join(dir, "config.toml")
	if err := writeConfig(cfgPath, s); err != nil {
		return nil, err
	}
	return startDaemon(e.bin, cfgPath, filepath.Join(dir, "daemon.log"), timeout)
}

func writeConfig(path string, s bench.Setup) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, s.TOML(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path) // one atomic change for the daemon's watcher
}

// label is the run's first cell in figures 1 and 2.
func (s scaleUp) label() string {
	if s.IdleFirst {
		return s.Mode + ", idle target"
	}
	return s.Mode
}

// runScaleUp queues jobs spacing apart on one repository target and measures their wait. With
// idleFirst (poll mode) the burst waits until the repository is idle, its last quietReads reads
// all 304: it is then read every idle_poll_interval (4 x poll), and the burst comes a third of a
// poll after the first pass that skipped it, so its first job waits about 2.7 polls.
func (e env) runScaleUp(mode string, poll time.Duration, jobs int, spacing, jobRun time.Duration, idleFirst bool) (scaleUp, error) {
	r := scaleUp{Mode: mode, Poll: poll, Jobs: jobs, Spacing: spacing, JobRun: jobRun, IdleFirst: idleFirst}
	if mode == "poll" {
		r.InForce = poll
	}
	name := "scaleup-" + mode
	if idleFirst {
		name += "-idle"
	}
	dir, w, err := e.setup(name, 1)
	if err != nil {
		return r, err
	}
	defer w.close()
	s := bench.Setup{StateDir: filepath.Join(dir, "state"), APIURL: w.frontURL, TokenFile: w.tokenFile, Targets: 1,
		HostMax: jobs, TargetMax: jobs, PollInterval: poll, IdleTimeout: 30 * time.Second}
	d, err := e.startWith(dir, w, s, mode == "webhook")
	if err != nil {
		return r, err
	}
	defer func() { r.Left, r.Killed = e.stopAndSweep(d, w, s.StateDir) }()
	if err := waitFor(10*time.Second, func() bool { return w.count.snapshot().Requests >= 2 }); err != nil {
		return r, fmt.Errorf("the daemon made no first pass: %w", err)
	}
	time.Sleep(time.Second) // let the first pass end before the window opens
	if idleFirst {
		last, err := w.awaitRunsReads(1+quietReads, (2+quietReads)*poll, e.log)
		if err != nil {
			return r, fmt.Errorf("the repository did not go idle: %w", err)
		}
		r.InForce = idlePollFactor * poll
		time.Sleep(time.Until(last.Add(poll + poll/3)))
	}
	c0, b0, t0 := w.count.snapshot(), w.budgetUsed(), time.Now()
	stop := w.requestSampler()
	ids, err := w.queueJobs(jobs, "bench", spacing, jobRun, repoOne)
	if err != nil {
		stop()
		return r, err
	}
	e.log("  %d jobs queued; waiting for them to run", jobs)
	deadline := 2*poll + 90*time.Second
	if mode == "webhook" {
		deadline = 90 * time.Second
	}
	err = waitFor(deadline, func() bool { return allJobs(w.sim, ids, done) })
	r.PerSecond = stop()
	r.Latencies = latencies(w.sim, ids)
	if err != nil {
		return r, fmt.Errorf("%d of %d jobs ran within %s: %w", len(r.Latencies), jobs, deadline, err)
	}
	r.Window, r.Req, r.Budget = time.Since(t0), w.count.snapshot().minus(c0), w.budgetUsed()-b0
	return r, nil
}

// The daemon's adaptive polling (internal/github/adaptive.go, config.DefaultIdlePollFactor): a
// repository whose last quietReads reads all answered 304 is read every idlePollFactor passes.
const quietReads, idlePollFactor = 3, 4

// awaitRunsReads waits until the daemon began n reads of the runs endpoints and returns when the
// last one began. A read is the GETs of one pass, sent within a moment of each other; passes are
// seconds apart at least (the first pass and the first slot after it may be a few seconds apart).
func (w *world) awaitRunsReads(n int, timeout time.Duration, log func(string, ...any)) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	var at time.Time
	last, reads := 0, 0
	for reads < n {
		if time.Now().After(deadline) {
			return at, fmt.Errorf("%d of %d reads of the runs in %s", reads, n, timeout)
		}
		if c := w.count.snapshot().ByKind["GET runs"]; c > last {
			if time.Since(at) > 2*time.Second {
				reads, at = reads+1, time.Now()
				log("  read %d of the runs (%d GET runs so far)", reads, c)
			}
			last = c
		}
		time.Sleep(100 * time.Millisecond)
	}
	return at, nil
}

// startWith starts the daemon on s in dir, subscribed to the simulator's workflow_job deliveries
// when webhook is set.
func (e env) startWith(dir string, w *world, s bench.Setup, webhook bool) (*daemon, error) {
	if webhook {
		if err := w.subscribe(dir, &s); err != nil {
			return nil, err
		}
	}
	return e.startIn(dir, s, 60*time.Second)
}

// repoOne puts every job in repository 1 (a repository target's).
func repoOne(int) string { return bench.Repo(1) }

// subscribe gives s a webhook listener on a free port and subscribes it to the simulator's
// workflow_job deliveries.
func (w *world) subscribe(dir string, s *bench.Setup) error {
	addr, err := freePort()
	if err != nil {
		return err
	}
	secret := filepath.Join(dir, "webhook-secret")
	if err := os.WriteFile(secret, []byte("bench-secret\n"), 0o600); err != nil {
		return err
	}
	s.Webhook.Listen, s.Webhook.Path, s.Webhook.SecretFile = addr, "/webhook", secret
	w.sim.AddWebhook("http://"+addr+"/webhook", "bench-secret")
	return nil
}

// queueJobs queues n jobs with label, job i in repository repo(i), spacing apart, each running jobRun.
func (w *world) queueJobs(n int, label string, spacing, jobRun time.Duration, repo func(i int) string) ([]int64, error) {
	ids := make([]int64, 0, n)
	for i := range n {
		id, err := w.sim.QueueJob(repo(i), []string{label}, jobRun)
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
		if i < n-1 {
			time.Sleep(spacing)
		}
	}
	return ids, nil
}

// latencies are the started jobs' queued -> in progress times, as the simulator stamped them.
func latencies(sim *ghsim.Server, ids []int64) []time.Duration {
	var out []time.Duration
	for _, id := range ids {
		if j, ok := sim.Job(id); ok && !j.StartedAt.IsZero() {
			out = append(out, j.StartedAt.Sub(j.CreatedAt))
		}
	}
	return out
}

func done(j ghsim.Job) bool { return j.Status == ghsim.StatusCompleted }

func allJobs(sim *ghsim.Server, ids []int64, ok func(ghsim.Job) bool) bool {
	for _, id := range ids {
		if j, found := sim.Job(id); !found || !ok(j) {
			return false
		}
	}
	return true
}

// stopAndSweep stops the daemon, then counts what it left: registrations at the simulator and
// runner processes under its state directory, which it kills so nothing outlives the benchmark.
func (e env) stopAndSweep(d *daemon, w *world, stateDir string) (left, killed int) {
	if err := d.stop(60 * time.Second); err != nil {
		e.log("  %v", err)
	}
	left = len(w.sim.Runners())
	states, _ := filepath.Glob(filepath.Join(stateDir, "*", "*", runner.ShimStateFile))
	for _, f := range states {
		st, err := runner.ReadShimState(filepath.Dir(f))
		if err != nil {
			continue
		}
		for _, p := range []runner.Handle{{PID: st.RunnerPID, StartTime: st.RunnerStartTime}, st.Handle()} {
			if alive, err := runner.Alive(p.PID, p.StartTime); err == nil && alive && p.PID > 0 {
				if proc, err := os.FindProcess(p.PID); err == nil {
					_ = proc.Kill() // SIGKILL; TerminateProcess on Windows
				}
				killed++
			}
		}
	}
	return left, killed
}

// rereadWait bounds the wait for every idle target's second read: at 1,000 targets the governor
// spreads the first reads over about 7 minutes and a target's second read comes within two
// (stretched) intervals of its first.
const rereadWait = 25 * time.Minute

// idleDaemon is a daemon serving targets idle repository targets on a world of its own.
type idleDaemon struct {
	w       *world
	d       *daemon
	s       bench.Setup
	cfgPath string
	started time.Time // just before the daemon was started
}

// startIdle starts a daemon on targets idle repository targets, in the work directory's name.
// close stops it and its world.
func (e env) startIdle(name string, targets int, poll time.Duration) (*idleDaemon, error) {
	dir, w, err := e.setup(name, targets)
	if err != nil {
		return nil, err
	}
	i := &idleDaemon{w: w, cfgPath: filepath.Join(dir, "config.toml"), s: bench.Setup{StateDir: filepath.Join(dir, "state"),
		APIURL: w.frontURL, TokenFile: w.tokenFile, Targets: targets, HostMax: targets, TargetMax: 1, PollInterval: poll}}
	if err := writeConfig(i.cfgPath, i.s); err != nil {
		w.close()
		return nil, err
	}
	i.started = time.Now()
	if i.d, err = startDaemon(e.bin, i.cfgPath, filepath.Join(dir, "daemon.log"), 2*time.Minute); err != nil {
		w.close()
		return nil, err
	}
	return i, nil
}

func (e env) closeIdle(i *idleDaemon) {
	e.stopAndSweep(i.d, i.w, i.s.StateDir)
	i.w.close()
}

func (e env) runIdle(targets int, poll, warmup, window time.Duration, reload bool) (idle, error) {
	r := idle{Targets: targets, Poll: poll, Warmup: warmup, Window: window}
	i, err := e.startIdle(fmt.Sprintf("idle-%d", targets), targets, poll)
	if err != nil {
		return r, err
	}
	defer e.closeIdle(i)
	w, d, s, cfgPath, started := i.w, i.d, i.s, i.cfgPath, i.started
	r.ReadyIn = d.Ready
	// The window measures the steady state: it opens once every repository was read a second time
	// (its first read pays for the ETags; at 1,000 targets the first reads alone take the governor
	// about 7 minutes), and no sooner than warmup.
	if err := waitFor(rereadWait, func() bool { return w.count.snapshot().RereadRepos >= targets }); err != nil {
		return r, fmt.Errorf("%d of %d repositories were read again: %w", w.count.snapshot().RereadRepos, targets, err)
	}
	time.Sleep(time.Until(started.Add(warmup)))
	r.Warmup = time.Since(started).Round(time.Second)
	u0, err := readUsage(d.PID())
	if err != nil {
		return r, err
	}
	c0, b0 := w.count.snapshot(), w.budgetUsed()
	r.RSSStart, r.RSSMax, r.RSSSeries = u0.RSSKiB, u0.RSSKiB, []int{u0.RSSKiB}
	stop := w.requestSampler()
	u1 := u0
	for time.Since(u0.At) < window {
		time.Sleep(time.Second)
		if u1, err = readUsage(d.PID()); err != nil {
			stop()
			return r, err
		}
		r.RSSMax, r.RSSSeries = max(r.RSSMax, u1.RSSKiB), append(r.RSSSeries, u1.RSSKiB)
	}
	r.PerSecond = stop()
	r.Req, r.Budget = w.count.snapshot().minus(c0), w.budgetUsed()-b0
	r.RSSEnd, r.CPU, r.Window = u1.RSSKiB, u1.CPU-u0.CPU, u1.At.Sub(u0.At)
	if reload {
		r.Reload, err = e.reloadOne(d, w, cfgPath, s, r)
	}
	return r, err
}

// reloadOne edits one target of the running daemon's file and times the reload as the daemon
// logs it, then counts the requests of the next few seconds against the idle rate.
func (e env) reloadOne(d *daemon, w *world, cfgPath string, s bench.Setup, r idle) (*daemonReload, error) {
	const after = 5 * time.Second
	out := &daemonReload{AfterWindow: after}
	s.Edited = 1
	done := d.await(`"msg":"config reloaded"`)
	c0 := w.count.snapshot()
	t0 := time.Now()
	if err := writeConfig(cfgPath, s); err != nil {
		return nil, err
	}
	select {
	case at := <-done:
		out.Took = at.Sub(t0)
	case <-time.After(time.Minute):
		out.ReloadTimeout = true
		return out, nil
	}
	time.Sleep(after - time.Since(t0))
	out.After = w.count.snapshot().minus(c0)
	out.IdleSameSpan = float64(r.Req.Requests) * after.Seconds() / r.Window.Seconds()
	return out, nil
}

// waitFor polls cond (a real process or simulator event) until it holds or timeout passes, every
// 100 ms: gently, so the polling adds little to the load being measured.
func waitFor(timeout time.Duration, cond func() bool) error {
	return livetest.Poll(timeout, 100*time.Millisecond, cond)
}
