package status

import (
	"bytes"
	"testing"
	"time"
)

func failures() []Failure {
	one := 1
	return []Failure{
		{Attempt: "h1-0000000042", Target: "web", Runner: "runner-manager-h1-0000000042", Reason: "exited with status 1", ExitCode: &one,
			At: ago(3 * time.Minute), Files: []string{"shim/runner.log", "runner/Runner_20261202-135700-utc.log"}, Command: LogsCommand("h1-0000000042")},
		{Attempt: "h1-0000000007", Target: "infra", Runner: "runner-manager-h1-0000000007", Reason: "registration_timed_out: not online within 5m0s",
			At: ago(2 * time.Hour), Files: []string{"shim/runner.log"}, Command: LogsCommand("h1-0000000007")},
	}
}

func withFailure() Snapshot {
	s := fixture()
	f := failures()[0]
	s.Targets[0].LastFailure = &f
	s.Events = nil
	return s
}

func logs() Logs {
	return Logs{Failure: failures()[0], Skipped: []string{"runner/steal.log: a symbolic link: not followed"}, Logs: []LogFile{
		{Name: "shim/runner.log", Content: "fakerunner: exiting at start (fault)\n"},
		{Name: "runner/Runner_20261202-135700-utc.log", Dropped: 2048, Content: "[2026-12-02 13:57:00Z INFO Runner] runner exiting with status 1"},
	}}
}

// TestDiagnosticsRenderings: `runners --failed` (text and JSON), `logs ATTEMPT-ID` and status's
// per-target last failure, against their golden files.
func TestDiagnosticsRenderings(t *testing.T) {
	checkRenderings(t, []rendering{
		{"status-last-failure.txt", func(b *bytes.Buffer) error { return RenderStatus(b, withFailure(), now) }},
		{"failed.txt", func(b *bytes.Buffer) error { return RenderFailures(b, failures(), now) }},
		{"failed-none.txt", func(b *bytes.Buffer) error { return RenderFailures(b, nil, now) }},
		{"failed.json", func(b *bytes.Buffer) error { return WriteJSON(b, FailureList{Failures: failures()}) }},
		{"logs.txt", func(b *bytes.Buffer) error { return RenderLogs(b, logs()) }},
	})
}
