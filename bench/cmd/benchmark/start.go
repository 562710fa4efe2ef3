package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/runner-manager/runner-manager/bench"
	"github.com/runner-manager/runner-manager/config"
)

// startTargets is the size of the large start (issue 14, item 7): `daemon running` within 5 s and
// at most 300 MB RSS.
const startTargets = 10000

// startRun is one start of the real daemon on a startTargets-target file, against the simulator.
type startRun struct {
	Format  string
	Targets int
	Ready   time.Duration // exec -> the ready line
	Window  time.Duration // how long after the ready line RSS was watched
	Passes  int           // REST requests the daemon sent in that window (its first passes)
	RSSPeak int           // KiB, VmHWM: the process's peak resident set, start and window included
	RSSEnd  int           // KiB, VmRSS at the end of the window
	StopIn  time.Duration // SIGTERM -> exit
}

// runStart starts the daemon on a generated startTargets-target file in each format, waits for
// its ready line, lets its loops run for window, and reads its peak RSS from the kernel.
func (e env) runStart(window time.Duration) ([]startRun, error) {
	dir, w, err := e.setup("start", startTargets)
	if err != nil {
		return nil, err
	}
	defer w.close()
	var out []startRun
	for _, format := range []string{"toml", "yaml"} {
		r := startRun{Format: format, Targets: startTargets, Window: window}
		s := bench.Setup{StateDir: filepath.Join(dir, "state-"+format), APIURL: w.frontURL, TokenFile: w.tokenFile,
			Targets: startTargets, HostMax: config.MaxRunnersLimit, TargetMax: 1, PollInterval: 30 * time.Second}
		data := s.Render(format)
		cfgPath := filepath.Join(dir, "config."+format)
		if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
			return nil, err
		}
		d, err := startDaemon(e.bin, cfgPath, filepath.Join(dir, "daemon-"+format+".log"), 2*time.Minute)
		if err != nil {
			return nil, err
		}
		r.Ready = d.Ready
		c0 := w.count.snapshot()
		// The loops' first passes, spread over the (stretched) poll interval by the governor; the
		// log shows how RSS follows the passes.
		for t0 := time.Now(); time.Since(t0) < window; {
			time.Sleep(min(10*time.Second, window-time.Since(t0)))
			if u, err := readUsage(d.PID()); err == nil {
				e.log("  %s: %s after ready, RSS %.1f MiB, %d requests", format, time.Since(t0).Round(time.Second), float64(u.RSSKiB)/1024, w.count.snapshot().minus(c0).Requests)
			}
		}
		r.Passes = w.count.snapshot().minus(c0).Requests
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.PID()))
		if err == nil {
			r.RSSPeak, err = statusKiB(string(status), "VmHWM:")
		}
		if err == nil {
			r.RSSEnd, err = statusKiB(string(status), "VmRSS:")
		}
		t0 := time.Now()
		e.stopAndSweep(d, w, s.StateDir)
		r.StopIn = time.Since(t0)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (r results) renderStart(p printer) {
	p("## 9. Daemon start with 10,000 targets\n\n")
	p("The real daemon on a generated file of 10,000 repository targets (`bench.Setup`, poll_interval 30s,\n")
	p("host max_runners 1,000), against the simulator with 10,000 repositories: wall time from exec to\n")
	p("the `daemon running` ready line, then its loops run for a window. Peak RSS is the kernel's\n")
	p("high-water mark of the process (`/proc/<pid>/status` VmHWM), so it covers loading the file, the\n")
	p("start and the first passes of the window. The goal is `daemon running` within 5 s and at most\n")
	p("300 MB RSS.\n\n")
	p("| format | targets | start to `daemon running` | window after ready | REST requests in window | peak RSS | RSS at end | SIGTERM to exit | command |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range r.Start {
		p("| %s | %d | %s | %s | %d | %.1f MiB | %.1f MiB | %s | `%s -only start10k` |\n", s.Format, s.Targets, secs(s.Ready), s.Window,
			s.Passes, float64(s.RSSPeak)/1024, float64(s.RSSEnd)/1024, secs(s.StopIn), r.self())
	}
	p("\nThe request governor spreads the 10,000 loops' polls over a stretched interval (600 points a\n")
	p("minute cannot poll 10,000 targets every 30 s), so the window sees a fraction of the first passes;\n")
	p("the benchmark logs RSS every 10 s of it. Each loop is one goroutine with its own stack; those\n")
	p("stacks and the loops' state are most of the RSS. Per-target metric series that have not changed\n")
	p("yet are made at each scrape, not stored. Every loop looks its target up in the config on every\n")
	p("pass: `config.Config.Target` is\n")
	p("a map lookup (a scan of 10,000 targets per loop made the start quadratic). SIGTERM to exit is the\n")
	p("shutdown drain of 10,000 loops (`shutdown_drain_timeout` 20s in this file), the engine's bound.\n\n")
}
