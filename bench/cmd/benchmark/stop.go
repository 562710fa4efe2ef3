package main

import (
	"bytes"
	"os"
	"path/filepath"
	"time"

	"github.com/runner-manager/runner-manager/bench"
	"github.com/runner-manager/runner-manager/config"
)

// stopTargets is the size of the large stop (issue 28, item 4): 10,000 targets with no runner stop
// in under 2 s.
const stopTargets = 10000

// stopRun is one stop of the real daemon serving stopTargets idle targets.
type stopRun struct {
	Targets  int
	Window   time.Duration // how long the daemon ran after its ready line before SIGTERM
	StopIn   time.Duration // SIGTERM -> exit
	Requests int           // REST requests the daemon sent from SIGTERM to its exit
	Lines    int           // log lines it wrote from SIGTERM to its exit
	Left     int           // registrations left at the simulator after the stop
}

// runStop starts the daemon on stopTargets repository targets with no job, lets its loops run for
// window (their first passes under way, some waiting in the request governor), then stops it and
// counts what the stop cost: its time, its GitHub requests and its log lines.
func (e env) runStop(window time.Duration) (stopRun, error) {
	r := stopRun{Targets: stopTargets, Window: window}
	dir, w, err := e.setup("stop", stopTargets)
	if err != nil {
		return r, err
	}
	defer w.close()
	s := bench.Setup{StateDir: filepath.Join(dir, "state"), APIURL: w.frontURL, TokenFile: w.tokenFile,
		Targets: stopTargets, HostMax: config.MaxRunnersLimit, TargetMax: 1, PollInterval: 30 * time.Second}
	d, err := e.startIn(dir, s, 2*time.Minute)
	if err != nil {
		return r, err
	}
	time.Sleep(window)
	logPath := filepath.Join(dir, "daemon.log")
	before := logLines(logPath)
	c0 := w.count.snapshot()
	t0 := time.Now()
	r.Left, _ = e.stopAndSweep(d, w, s.StateDir)
	r.StopIn = time.Since(t0)
	r.Requests = w.count.snapshot().minus(c0).Requests
	r.Lines = logLines(logPath) - before
	return r, nil
}

func logLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

func (r results) renderStop(p printer) {
	s := r.Stop
	p("## Daemon stop with 10,000 idle targets\n\n")
	p("The real daemon on a generated file of 10,000 repository targets with no job (`bench.Setup`,\n")
	p("poll_interval 30s), against the simulator: it runs for a window after its ready line (its first\n")
	p("passes under way, spread by the request governor), then gets SIGTERM. Counted from SIGTERM to\n")
	p("the process's exit: wall time, REST requests at the simulator's front, and the daemon's log lines.\n")
	p("The goal is under 2 s: a stop costs by the runners the host owns, not by its targets.\n\n")
	p("| targets | window after ready | SIGTERM to exit | REST requests during the stop | log lines during the stop | registrations left | command |\n|---|---|---|---|---|---|---|\n")
	p("| %d | %s | %s | %d | %d | %d | `%s -only stop10000` |\n\n", s.Targets, s.Window, secs(s.StopIn), s.Requests, s.Lines, s.Left, r.self())
	p("A loop that owns nothing ends at a stop without a GitHub read and without a log line, and the\n")
	p("last sweep of this host's registrations reads only targets this run sent a registration request to\n")
	p("that was given up or not journaled (docs/engine.md); engine test TestStopReadsOnlyDoubtedTargets\n")
	p("counts the reads. What is left is the daemon's own stop (loops joined, journal closed).\n\n")
}
