// Package logging builds the daemon's slog.Logger: tinted text on a terminal, JSON otherwise, and
// always behind a redacting handler so no token, JWT, private key or JIT config reaches a log line.
// It owns log formatting only; it never decides what is logged.
package logging

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/lmittmann/tint"
	"golang.org/x/term"
)

// New returns a logger writing to w at level ("debug", "info", "warn", "error"; anything else is
// info) in format: "text" (tint, coloured only when isTTY), "json", or "auto" (text on a terminal,
// JSON otherwise; also used for any other value). Every record passes through Redact.
func New(w io.Writer, level, format string, isTTY bool) *slog.Logger {
	return slog.New(NewRedactingHandler(formatHandler(w, ParseLevel(level), format, isTTY)))
}

// formatHandler is the handler of format ("text", "json" or "auto") at level, without redaction.
func formatHandler(w io.Writer, lvl slog.Leveler, format string, isTTY bool) slog.Handler {
	if format != "text" && format != "json" {
		format = "json"
		if isTTY {
			format = "text"
		}
	}
	if format == "text" {
		return tint.NewHandler(w, &tint.Options{Level: lvl, TimeFormat: time.TimeOnly, NoColor: !isTTY})
	}
	return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl})
}

// IsTerminal reports whether f is a terminal, which is what "auto" decides on.
func IsTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

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
