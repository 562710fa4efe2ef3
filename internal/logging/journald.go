package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// Priority is the syslog priority journald records for a level (sd-daemon(3): SD_ERR, SD_WARNING,
// SD_INFO, SD_DEBUG), so `journalctl -p warning` shows warnings and errors only.
func Priority(l slog.Level) int {
	switch {
	case l >= slog.LevelError:
		return 3
	case l >= slog.LevelWarn:
		return 4
	case l >= slog.LevelInfo:
		return 6
	}
	return 7
}

// priorityHandler prefixes each record's line with "<N>" for journald. It relies on the inner
// handler writing one record in one Write (slog's JSON handler and tint both do).
type priorityHandler struct {
	inner slog.Handler
	w     *prefixWriter
}

type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}

func (h priorityHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h priorityHandler) Handle(ctx context.Context, r slog.Record) error {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	h.w.prefix = fmt.Sprintf("<%d>", Priority(r.Level))
	return h.inner.Handle(ctx, r)
}

func (h priorityHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return priorityHandler{inner: h.inner.WithAttrs(as), w: h.w}
}

func (h priorityHandler) WithGroup(name string) slog.Handler {
	return priorityHandler{inner: h.inner.WithGroup(name), w: h.w}
}
