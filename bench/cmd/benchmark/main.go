// Command benchmark is what `make bench` runs: it measures the figures of docs/benchmarks.md on this
// machine and writes the file. It runs the real daemon (bin/runner-manager) against the in-process
// GitHub simulator on 127.0.0.1 with the fake runner package (scale-up latency, REST requests,
// RSS and CPU, a live reload), runs the Go benchmarks of bench/ and journal/ with `go test -bench`,
// and renders every number from those measurements. It never contacts the real GitHub.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

type options struct {
	bin, out, only, goTool, module string
	update                         string
	poll                           time.Duration
	pollJobs, hookJobs             int
	pollSpacing, hookSpacing       time.Duration
	jobRun                         time.Duration
	warmup, window                 time.Duration
	setJobs                        int
	setSpacing, setIdle            time.Duration
	startWindow                    time.Duration
	stopWindow                     time.Duration
	fleetJobs                      int
	fleetSpacing, fleetPoll        time.Duration
	fleetPhases                    string
	phases                         []time.Duration // fleetPhases parsed (run)
	costJobs                       int
	costSpacing, limitsWindow      time.Duration
	rereadWindow                   time.Duration
	memWindow, memEvery            time.Duration
	containerJobs                  int
	containerSpacing, containerRun time.Duration
	keep                           bool
	figures                        string // where the figures' series and SVGs go (see figuresDir)
	plotsOnly                      bool
}

// goBenches are the Go benchmark invocations, each bounded by its -benchtime.
func goBenches() map[string]goBench {
	b := func(pattern, benchtime, pkg string) goBench {
		return goBench{Args: []string{"test", "-run", "^$", "-bench", pattern, "-benchtime", benchtime, "-count", "1", pkg}}
	}
	return map[string]goBench{
		"journal":  b(".", "1s", "./journal/"),
		"reload":   b("^BenchmarkReload1000$", "5x", "./bench/"),
		"recovery": b("^BenchmarkRecovery", "1x", "./bench/"),
		"launch":   b("^BenchmarkLaunchFromCache$", "20x", "./bench/"),
		"validate": b("^BenchmarkValidate$", "3x", "./bench/"),
	}
}

var allParts = []string{"journal", "reload", "recovery", "launch", "validate", "poll", "webhook", "idle1", "idle100", "idle1000", "webhook-burst", "scaleset", "start10k", "stop10000", "fleet1", "fleet2", "fleet3", "alone1", "alone3",
	"cost-repo-webhook", "cost-org100-webhook", "cost-org300-webhook", "cost-repo-poll", "cost-org100-poll", "cost-org300-poll", "limits1000", "limits5000", "idle5000", "idle1000-30m", "containers"}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "directory holding runner-manager (make build)")
	flag.StringVar(&o.out, "out", "-", "write the markdown here ('-' = stdout)")
	flag.StringVar(&o.update, "update", "", "instead of -out: splice the sections this run renders into this file (docs/benchmarks.md), keeping the others; for a run with -only")
	flag.StringVar(&o.only, "only", "", "comma-separated parts to run (default all): "+strings.Join(allParts, ","))
	flag.StringVar(&o.goTool, "go", "go", "go command for the Go benchmarks")
	flag.StringVar(&o.module, "module", ".", "module root the Go benchmarks run in")
	flag.DurationVar(&o.poll, "poll", 30*time.Second, "poll_interval of the poll-mode and idle runs (the daemon's default)")
	flag.IntVar(&o.pollJobs, "poll-jobs", 16, "jobs queued in the poll-mode scale-up run")
	flag.DurationVar(&o.pollSpacing, "poll-spacing", 2*time.Second, "time between two queued jobs in poll mode")
	flag.IntVar(&o.hookJobs, "webhook-jobs", 30, "jobs queued in the webhook-mode scale-up run")
	flag.DurationVar(&o.hookSpacing, "webhook-spacing", time.Second, "time between two queued jobs in webhook mode")
	flag.DurationVar(&o.jobRun, "job-run", time.Second, "how long each job runs")
	flag.DurationVar(&o.warmup, "idle-warmup", 42*time.Second, "at least this long from the start before the idle window, which also waits for every target's second read (the steady state)")
	flag.DurationVar(&o.window, "idle-window", 60*time.Second, "idle measurement window: a whole number of -poll intervals")
	flag.IntVar(&o.setJobs, "scaleset-jobs", 20, "jobs queued in the scale-set run")
	flag.DurationVar(&o.setSpacing, "scaleset-spacing", time.Second, "time between two queued jobs in the scale-set run")
	flag.DurationVar(&o.setIdle, "scaleset-idle-window", 2*time.Minute, "idle window of the scale-set run (a few 50 s long polls)")
	flag.DurationVar(&o.stopWindow, "stop-window", 20*time.Second, "how long the 10,000-target daemon of stop10000 runs after its ready line before SIGTERM")
	flag.DurationVar(&o.startWindow, "start-window", time.Minute, "how long the 10,000-target daemon runs after its ready line (its first passes) before its peak RSS is read")
	flag.IntVar(&o.fleetJobs, "fleet-jobs", 24, "jobs queued in each fleet run")
	flag.DurationVar(&o.fleetSpacing, "fleet-spacing", 2*time.Second, "time between two queued jobs in the fleet runs")
	flag.DurationVar(&o.fleetPoll, "fleet-poll", 10*time.Second, "poll_interval of the fleet runs")
	flag.StringVar(&o.fleetPhases, "fleet-phase", "1s,5s", "in the fleet runs, how long after a poll the first job is queued, comma-separated: each fleet part runs once at each")
	flag.IntVar(&o.costJobs, "cost-jobs", 10, "jobs queued in each cost-* run (an organization's spread over its repositories)")
	flag.DurationVar(&o.costSpacing, "cost-spacing", 2*time.Second, "time between two queued jobs in the cost-* runs")
	flag.DurationVar(&o.limitsWindow, "limits-window", 10*time.Minute, "how long the limits1000 and limits5000 daemons run (from their ready line)")
	flag.DurationVar(&o.rereadWindow, "reread-window", 80*time.Minute, "at most this long the idle5000 daemon runs waiting for every target's second read (up to its first-pass window and two intervals: 70 minutes at its ceiling)")
	flag.DurationVar(&o.memWindow, "memory-window", 30*time.Minute, "how long the idle1000-30m daemon runs")
	flag.DurationVar(&o.memEvery, "memory-every", 5*time.Minute, "how often the idle1000-30m run shows the daemon's RSS")
	flag.IntVar(&o.containerJobs, "container-jobs", 10, "jobs of the containers part, all in progress at once (N running containers)")
	flag.DurationVar(&o.containerSpacing, "container-spacing", 500*time.Millisecond, "time between two queued jobs in the containers part")
	flag.DurationVar(&o.containerRun, "container-job-run", 40*time.Second, "how long each job of the containers part runs: longer than queueing and launching them all")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (daemon logs, configs)")
	flag.StringVar(&o.figures, "figures", "", "directory of the figures' recorded series (<part>.json) and SVGs (default: figures beside -out or -update)")
	flag.BoolVar(&o.plotsOnly, "plots-only", false, "measure nothing: redraw the SVGs in -figures from the series recorded there (make plots)")
	flag.Parse()
	if err := run(o, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "benchmark:", err)
		os.Exit(1)
	}
}

func run(o options, argv []string) error {
	if o.plotsOnly {
		return plotsOnly(o, argv)
	}
	parts, err := selectParts(o.only)
	if err != nil {
		return err
	}
	if o.phases, err = durations(o.fleetPhases); err != nil {
		return fmt.Errorf("-fleet-phase: %w", err)
	}
	work, err := os.MkdirTemp("", "runner-manager-bench-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "benchmark: work directory", work)
	} else {
		defer os.RemoveAll(work)
	}
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "benchmark: "+format+"\n", args...) }
	start := time.Now()
	r := results{Machine: describeMachine(o.goTool), GoTool: o.goTool, Command: strings.Join(append([]string{"bin/benchmark"}, argv[1:]...), " ")}
	fail := func(part string, err error) {
		logf("%s failed: %v", part, err)
		r.Errors = append(r.Errors, part+": "+err.Error())
	}
	benches := goBenches()
	for _, part := range []string{"journal", "reload", "recovery", "launch", "validate"} {
		if !parts[part] {
			continue
		}
		g := benches[part]
		logf("running %s", g.command(o.goTool))
		err := g.run(o.goTool, o.module)
		r.Go = append(r.Go, g)
		if err != nil {
			fail(part, err)
		}
	}
	if parts["validate"] {
		bin, err := filepath.Abs(o.bin)
		if err != nil {
			return err
		}
		logf("validate of generated 1,000- and 10,000-target files")
		if r.Validate, err = (env{bin: bin, dir: work}).runValidate(); err != nil {
			fail("validate", err)
		}
	}
	if parts["poll"] || parts["webhook"] || parts["idle1"] || parts["idle100"] || parts["idle1000"] || parts["scaleset"] ||
		parts["fleet1"] || parts["fleet2"] || parts["fleet3"] || parts["alone1"] || parts["alone3"] {
		if err := daemonParts(o, parts, work, logf, &r, fail); err != nil {
			return err
		}
	}
	if scale := slices.ContainsFunc(allParts, func(p string) bool {
		return parts[p] && (strings.HasPrefix(p, "cost-") || strings.HasPrefix(p, "limits") || p == "idle5000")
	}); scale {
		e, err := daemonEnv(o, work, logf)
		if err != nil {
			return err
		}
		scaleParts(o, parts, e, &r, fail)
	}
	for _, part := range slices.Sorted(maps.Keys(memoryParts)) {
		if !parts[part] {
			continue
		}
		e, err := daemonEnv(o, work, logf)
		if err != nil {
			return err
		}
		logf("memory, %d idle targets for %s, RSS every %s", memoryParts[part], o.memWindow, o.memEvery)
		m, err := e.runMemory(memoryParts[part], o.poll, o.memWindow, o.memEvery)
		if err != nil {
			fail(part, err)
			continue
		}
		r.Memory = append(r.Memory, m)
	}
	if parts["webhook-burst"] {
		bin, err := filepath.Abs(o.bin)
		if err != nil {
			return err
		}
		logf("webhook burst: %d unsigned 1 MiB bodies at once", burstRequests)
		b, err := (env{bin: bin, dir: work, log: logf}).runBurst()
		if err != nil {
			fail("webhook-burst", err)
		} else {
			r.Burst = &b
		}
	}
	if parts["start10k"] {
		bin, err := filepath.Abs(o.bin)
		if err != nil {
			return err
		}
		logf("start with %d targets (TOML, YAML), window %s after ready", startTargets, o.startWindow)
		if r.Start, err = (env{bin: bin, dir: work, log: logf}).runStart(o.startWindow); err != nil {
			fail("start10k", err)
		}
	}
	if parts["stop10000"] {
		bin, err := filepath.Abs(o.bin)
		if err != nil {
			return err
		}
		logf("stop with %d idle targets, %s after ready", stopTargets, o.stopWindow)
		st, err := (env{bin: bin, dir: work, log: logf}).runStop(o.stopWindow)
		if err != nil {
			fail("stop10000", err)
		} else {
			r.Stop = &st
		}
	}
	if parts["containers"] {
		e, err := daemonEnv(o, work, logf)
		if err != nil {
			return err
		}
		logf("containers: %d jobs on host runners, then on container runners", o.containerJobs)
		if r.Containers, err = e.runContainers(o.containerJobs, o.containerSpacing, o.containerRun); err != nil {
			fail("containers", err)
		}
	}
	r.Machine.LoadEnd = loadAvg()
	r.Machine.Took = time.Since(start)
	if dir := figuresDir(o); dir != "" {
		if r.Figures, err = recordFigures(dir, r); err != nil {
			fail("figures", err)
		}
	}
	if o.update != "" {
		if err := updateFile(o.update, r, parts); err != nil {
			return err
		}
	} else if err := writeOut(o.out, r); err != nil {
		return err
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("%d part(s) failed (reported in the output)", len(r.Errors))
	}
	return nil
}

// updateFile splices r's sections into the markdown file at path (see splice); ran is the parts
// this run ran.
func updateFile(path string, r results, ran map[string]bool) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("-update: %w", err)
	}
	var part bytes.Buffer
	r.render(&part)
	m := r.Machine
	note := fmt.Sprintf("Measured apart from the rest of this file: `%s` (%s UTC, whole run %s, load %s -> %s).",
		r.Command, m.Date.UTC().Format("2006-01-02 15:04"), m.Took.Round(time.Second), strings.TrimSuffix(m.LoadStart, " (1, 5, 15 min)"), strings.TrimSuffix(m.LoadEnd, " (1, 5, 15 min)"))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, splice(doc, part.Bytes(), note, ran), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func writeOut(out string, r results) error {
	var w io.Writer = os.Stdout
	if out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	r.render(w)
	return nil
}

// daemonEnv is where daemon runs happen: the binaries, the work directory and a fake runner package.
func daemonEnv(o options, work string, logf func(string, ...any)) (env, error) {
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return env{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	pkg, err := ghsim.BuildFakeRunnerPackage(ctx, work)
	cancel()
	if err != nil {
		return env{}, fmt.Errorf("build the fake runner package: %w", err)
	}
	return env{bin: bin, dir: work, pkg: pkg, log: logf}, nil
}

func daemonParts(o options, parts map[string]bool, work string, logf func(string, ...any), r *results, fail func(string, error)) error {
	e, err := daemonEnv(o, work, logf)
	if err != nil {
		return err
	}
	for _, sc := range []struct {
		mode      string
		poll      time.Duration
		jobs      int
		spacing   time.Duration
		idleFirst bool
	}{{"poll", o.poll, o.pollJobs, o.pollSpacing, false}, {"poll", o.poll, o.pollJobs, o.pollSpacing, true}, {"webhook", 10 * time.Minute, o.hookJobs, o.hookSpacing, false}} {
		if !parts[sc.mode] {
			continue
		}
		logf("scale-up, %s mode: %d jobs every %s, poll_interval %s, idle target first %v", sc.mode, sc.jobs, sc.spacing, sc.poll, sc.idleFirst)
		s, err := e.runScaleUp(sc.mode, sc.poll, sc.jobs, sc.spacing, o.jobRun, sc.idleFirst)
		if err != nil {
			fail(sc.mode, err)
			continue
		}
		r.ScaleUp = append(r.ScaleUp, s)
	}
	if parts["scaleset"] {
		logf("scale set: %d jobs every %s, idle window %s", o.setJobs, o.setSpacing, o.setIdle)
		s, err := e.runScaleSet(o.setJobs, o.setSpacing, o.jobRun, o.setIdle)
		if err != nil {
			fail("scaleset", err)
		}
		r.ScaleSet = &s
	}
	for _, ph := range o.phases {
		for _, f := range fleetParts {
			if !parts[f.part] {
				continue
			}
			logf("fleet, %d hosts (joined %v): %d jobs every %s from %s after a poll, poll_interval %s", f.hosts, f.joined, o.fleetJobs, o.fleetSpacing, ph, o.fleetPoll)
			s, err := e.runFleet(f.part, f.hosts, f.joined, fleetStream{o.fleetPoll, o.fleetSpacing, o.jobRun, ph, o.fleetJobs})
			if err != nil {
				fail(f.part, err)
				continue
			}
			r.Fleet = append(r.Fleet, s)
		}
	}
	for _, n := range []int{1, 100, 1000} {
		name := fmt.Sprintf("idle%d", n)
		if !parts[name] {
			continue
		}
		logf("idle, %d targets: warm-up %s, window %s", n, o.warmup, o.window)
		s, err := e.runIdle(n, o.poll, o.warmup, o.window, n == 1000)
		if err != nil {
			fail(name, err)
			continue
		}
		r.Idle = append(r.Idle, s)
	}
	return nil
}

func selectParts(only string) (map[string]bool, error) {
	parts := map[string]bool{}
	if only == "" {
		for _, p := range allParts {
			parts[p] = true
		}
		return parts, nil
	}
	known := map[string]bool{}
	for _, p := range allParts {
		known[p] = true
	}
	for _, p := range strings.Split(only, ",") {
		p = strings.TrimSpace(p)
		if !known[p] {
			return nil, fmt.Errorf("-only: unknown part %q (parts: %s)", p, strings.Join(allParts, ","))
		}
		parts[p] = true
	}
	return parts, nil
}

func describeMachine(goTool string) machine {
	m := machine{Date: time.Now().UTC(), LoadStart: loadAvg()}
	m.Nproc = commandOutput("nproc")
	m.GoVersion = commandOutput(goTool, "version")
	m.Kernel = commandOutput("uname", "-sr")
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPU = firstField(string(b), "model name")
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemTotal = firstField(string(b), "MemTotal")
	}
	return m
}

func firstField(text, key string) string {
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func commandOutput(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ") + " (1, 5, 15 min)"
}

// durations parses a comma-separated list of durations, each at least 0 (at least one).
func durations(list string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(list, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if d < 0 {
			return nil, fmt.Errorf("%s is negative", d)
		}
		out = append(out, d)
	}
	return out, nil
}
