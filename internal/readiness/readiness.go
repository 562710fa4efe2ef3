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

// DaemonLine is the message the daemon logs once it runs. It is a log record like every other line
// of the daemon, so it arrives on stderr in the configured format (JSON, text, or text with a
// journald priority): ParseDaemon finds it inside any of them.
func DaemonLine(pid int) string { return fmt.Sprintf("daemon running (pid %d)", pid) }

// The message, as JSON's "msg" value, tint's text or a bare line; a quoted mention inside another
// record's attribute does not follow a '"msg":"', a level (maybe coloured) or the line's start.
var daemonLine = regexp.MustCompile(`(?:^|"msg":"|(?:INF|INFO)(?:\x1b\[[0-9;]*m)?\s+)daemon running \(pid (\d+)\)`)

// ParseDaemon reports whether line is (or logs) the daemon's ready line, and the pid it names.
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
