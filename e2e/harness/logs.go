package harness

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// LogLine is one record of the daemon's JSON log (daemon.log_format = "json").
type LogLine struct {
	Time    time.Time `json:"time"`
	Level   string    `json:"level"`
	Msg     string    `json:"msg"`
	Kind    string    `json:"kind"`    // the engine's event kind: loop, reload, planned, busy, drain...
	Target  string    `json:"target"`  // the target an event concerns
	Attempt string    `json:"attempt"` // the runner attempt an event concerns
	Raw     string    `json:"-"`       // the line as written
}

// ParseLog parses a JSON log; lines that are not JSON records (a panic trace) keep only Raw.
func ParseLog(text string) []LogLine {
	var out []LogLine
	for _, raw := range strings.Split(text, "\n") {
		if strings.TrimSpace(raw) == "" {
			continue
		}
		var l LogLine
		_ = json.Unmarshal([]byte(raw), &l)
		l.Raw = raw
		out = append(out, l)
	}
	return out
}

// Logs is the daemon's log so far.
func (d *Daemon) Logs() []LogLine { return ParseLog(d.Stderr()) }

// LogMark is a position in the daemon's log: LogsSince(mark) are the records written after it.
type LogMark int

// Mark returns the current end of the log.
func (d *Daemon) Mark() LogMark { return LogMark(len(d.Logs())) }

// LogsSince returns the records written after mark.
func (d *Daemon) LogsSince(mark LogMark) []LogLine {
	all := d.Logs()
	if int(mark) >= len(all) {
		return nil
	}
	return all[mark:]
}

// WaitLog waits for a log record written after mark whose raw line matches pattern (a regexp)
// and returns it.
func (d *Daemon) WaitLog(t testing.TB, mark LogMark, pattern string, timeout time.Duration) LogLine {
	t.Helper()
	re := regexp.MustCompile(pattern)
	return d.WaitRecord(t, mark, timeout, "a log line matching "+pattern, func(l LogLine) bool { return re.MatchString(l.Raw) })
}

// WaitRecord waits for a log record written after mark that match accepts and returns it.
func (d *Daemon) WaitRecord(t testing.TB, mark LogMark, timeout time.Duration, what string, match func(LogLine) bool) LogLine {
	t.Helper()
	var found LogLine
	ok := Poll(timeout, func() bool {
		for _, l := range d.LogsSince(mark) {
			if match(l) {
				found = l
				return true
			}
		}
		return d.Exited()
	})
	if !ok || found.Raw == "" {
		t.Fatalf("timed out after %s waiting for %s (daemon exited: %v):\n%s", timeout, what, d.Exited(), d.tails())
	}
	return found
}

// Records filters lines to those match accepts.
func Records(lines []LogLine, match func(LogLine) bool) []LogLine {
	var out []LogLine
	for _, l := range lines {
		if match(l) {
			out = append(out, l)
		}
	}
	return out
}

// OfTarget matches the records about target.
func OfTarget(target string) func(LogLine) bool {
	return func(l LogLine) bool { return l.Target == target }
}

// OfKind matches the records of one event kind (loop, reload, reload-failed, drain, planned...).
func OfKind(kind string) func(LogLine) bool {
	return func(l LogLine) bool { return l.Kind == kind }
}

// Both matches records both a and b accept.
func Both(a, b func(LogLine) bool) func(LogLine) bool {
	return func(l LogLine) bool { return a(l) && b(l) }
}
