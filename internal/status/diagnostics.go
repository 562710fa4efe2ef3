package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"
)

// Paths of the kept diagnostics (internal/diag): the failed or stopped attempts whose logs the
// daemon kept, and one attempt's logs.
const (
	PathFailed = "/v1/failed"
	PathLogs   = "/v1/logs/" // + attempt id
)

// ErrNoLogs is a Logs answer for an attempt whose diagnostics were not kept (404).
var ErrNoLogs = errors.New("no diagnostics kept for this attempt")

// Failure is one failed or stopped attempt whose diagnostics were kept.
type Failure struct {
	Attempt  string    `json:"attempt"`
	Target   string    `json:"target"`
	Runner   string    `json:"runner"`
	Reason   string    `json:"reason"`
	ExitCode *int      `json:"exit_code,omitempty"`
	At       time.Time `json:"at"`           // when it was kept: the attempt's end
	Files    []string  `json:"files"`        // the kept files' names
	Command  string    `json:"logs_command"` // what shows its logs
}

// LogsCommand is the command that shows an attempt's kept logs.
func LogsCommand(attempt string) string { return "runner-manager logs " + attempt }

// FailureList is the document served at GET /v1/failed, newest first.
type FailureList struct {
	Failures []Failure `json:"failures"`
}

// Logs is the document served at GET /v1/logs/ID.
type Logs struct {
	Failure
	Logs    []LogFile `json:"logs"`
	Skipped []string  `json:"skipped,omitempty"` // entries of _diag not kept, and why
}

// LogFile is one kept file; Dropped bytes from its start were over the per-file cap.
type LogFile struct {
	Name    string `json:"name"`
	Dropped int64  `json:"dropped,omitempty"`
	Content string `json:"content"`
}

// DiagnosticsSource is what a Source also implements to serve kept diagnostics.
type DiagnosticsSource interface {
	Failures(ctx context.Context) ([]Failure, error)
	Logs(ctx context.Context, attempt string) (Logs, error)
}

func diagnosticsHandlers(mux *http.ServeMux, src DiagnosticsSource) {
	mux.HandleFunc("GET "+PathFailed, func(w http.ResponseWriter, r *http.Request) {
		f, err := src.Failures(r.Context())
		answer(w, FailureList{Failures: nonNil(f)}, "kept diagnostics unavailable: ", err)
	})
	mux.HandleFunc("GET "+PathLogs+"{attempt}", func(w http.ResponseWriter, r *http.Request) {
		l, err := src.Logs(r.Context(), r.PathValue("attempt"))
		switch {
		case errors.Is(err, ErrNoLogs):
			writeJSON(w, http.StatusNotFound, apiError{Error: err.Error()})
		case err != nil:
			writeJSON(w, http.StatusServiceUnavailable, apiError{Error: err.Error()})
		default:
			writeJSON(w, http.StatusOK, l)
		}
	})
}

// FetchFailures returns the failed attempts whose diagnostics the daemon kept.
func FetchFailures(ctx context.Context, socketPath string) ([]Failure, error) {
	var l FailureList
	err := get(ctx, socketPath, PathFailed, &l)
	return l.Failures, err
}

// FetchLogs returns an attempt's kept logs.
func FetchLogs(ctx context.Context, socketPath, attempt string) (Logs, error) {
	var l Logs
	err := get(ctx, socketPath, PathLogs+url.PathEscape(attempt), &l)
	return l, err
}

// RenderFailures writes one line per kept failure, newest first.
func RenderFailures(w io.Writer, failures []Failure, now time.Time) error {
	p := &printer{w: w}
	if len(failures) == 0 {
		p.linef("no failed runners kept")
		return p.err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p.tablef(tw, "AGO\tTARGET\tATTEMPT\tRUNNER\tREASON\tLOGS")
	for _, f := range failures {
		p.tablef(tw, "%s\t%s\t%s\t%s\t%s\t%s", age(now, f.At), dash(f.Target), f.Attempt, dash(f.Runner), oneLine(f.Reason), f.Command)
	}
	p.flush(tw)
	return p.err
}

// RenderLogs writes an attempt's kept logs, each file under a header.
func RenderLogs(w io.Writer, l Logs) error {
	p := &printer{w: w}
	p.linef("attempt %s of target %s (runner %s): %s, kept %s", l.Attempt, dash(l.Target), dash(l.Runner), oneLine(l.Reason), l.At.UTC().Format(time.RFC3339))
	for _, s := range l.Skipped {
		p.linef("not kept: %s", s)
	}
	for _, f := range l.Logs {
		head := "==> " + f.Name
		if f.Dropped > 0 {
			head += fmt.Sprintf(" (its first %d bytes were over the cap and not kept)", f.Dropped)
		}
		p.linef("%s <==", head)
		if p.err == nil {
			_, p.err = io.WriteString(w, f.Content)
		}
		if n := len(f.Content); n > 0 && f.Content[n-1] != '\n' {
			p.linef("")
		}
	}
	if len(l.Logs) == 0 {
		p.linef("no file was kept")
	}
	return p.err
}
