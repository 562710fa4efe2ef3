// Package readiness is the one definition of how runner-manager's programs announce that they are
// ready: the line the daemon prints once it runs, and the line the simulator (cmd/ghsim) prints once
// it serves. The programs print them through this package, and everything that starts them (e2e
// harness, upgrade tests, demo, benchmarks, through internal/daemonproc) recognises them through it,
// so a change of how readiness is signalled touches this file only.
package readiness

import (
	"fmt"
	"regexp"
	"strconv"
)

// DaemonLine is the line the daemon writes once it runs.
func DaemonLine(pid int) string { return fmt.Sprintf("daemon running (pid %d)", pid) }

var daemonLine = regexp.MustCompile(`^daemon running \(pid (\d+)\)`)

// ParseDaemon reports whether line is the daemon's ready line, and the pid it names.
func ParseDaemon(line string) (pid int, ok bool) {
	m := daemonLine.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	pid, err := strconv.Atoi(m[1])
	return pid, err == nil
}

// SimLine is the line the simulator writes once it serves at url.
func SimLine(url string) string {
	return fmt.Sprintf("ghsim: GitHub API at %s (admin API at %s/_ghsim/admin/)", url, url)
}

var simLine = regexp.MustCompile(`^ghsim: GitHub API at (http://\S+)`)

// ParseSim reports whether line is the simulator's ready line, and the URL it serves at.
func ParseSim(line string) (url string, ok bool) {
	m := simLine.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	return m[1], true
}
