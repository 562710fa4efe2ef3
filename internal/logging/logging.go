// Package logging builds the daemon's slog.Logger: tinted text on a terminal, JSON otherwise, and
// always behind a redacting handler so no token, JWT, private key or JIT config reaches a log line.
// It owns log formatting only; it never decides what is logged.
package logging

import (
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/lmittmann/tint"

	"github.com/runner-manager/runner-manager/internal/redact"
)

// Options are NewWith's and NewLiveWith's arguments.
type Options struct {
	// Level is "debug", "info", "warn" or "error"; anything else is info.
	// Format is "text" (tint, coloured only when IsTTY), "json", or "auto" (text on a terminal,
	// JSON otherwise; also used for any other value).
	Level, Format string
	IsTTY         bool
	// Journal: w is read by systemd-journald (UnderJournal). Each line then starts with its syslog
	// priority ("<3>" error ... "<7>" debug); "auto" picks plain text without a timestamp, since the
	// journal stamps every line itself.
	Journal bool
	// Redactor scrubs every record: the credential shapes, and the secrets it was told (the
	// contents of the config's secret files). Nil scrubs the shapes only.
	Redactor *redact.Redactor
}

// NewWith returns a logger writing to w as o says. Every record is scrubbed (NewRedactingHandler).
func NewWith(w io.Writer, o Options) *slog.Logger {
	return slog.New(NewRedactingHandler(formatHandler(w, ParseLevel(o.Level), o.Format, o.IsTTY, o.Journal), o.Redactor))
}

// formatHandler is the handler of format ("text", "json" or "auto") at level, without redaction;
// journal adds the syslog priority prefix (Options.Journal).
func formatHandler(w io.Writer, lvl slog.Leveler, format string, isTTY, journal bool) slog.Handler {
	if format != "text" && format != "json" {
		format = "json"
		if isTTY || journal {
			format = "text"
		}
	}
	var pw *prefixWriter
	if journal {
		pw = &prefixWriter{w: w}
		w = pw
	}
	var h slog.Handler
	switch {
	case format == "text" && journal:
		h = tint.NewHandler(w, &tint.Options{Level: lvl, NoColor: true, ReplaceAttr: dropTime})
	case format == "text":
		h = tint.NewHandler(w, &tint.Options{Level: lvl, TimeFormat: time.TimeOnly, NoColor: !isTTY})
	default:
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl})
	}
	if pw != nil {
		h = priorityHandler{inner: h, w: pw}
	}
	return h
}

// dropTime removes the record's time (journald records its own).
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// ParseLevel maps a config log_level to a slog.Level (info when unknown; config.Load has already
// rejected unknown levels).
func ParseLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
