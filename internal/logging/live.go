package logging

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
)

// Live is a logger whose level and format a config reload can change (log_level and log_format
// are live keys). Loggers derived from it with With or WithGroup follow the change too.
type Live struct {
	w       io.Writer
	isTTY   bool
	journal bool // Options.Journal
	level   slog.LevelVar
	root    atomic.Pointer[slog.Handler] // the format handler records go to now
	log     *slog.Logger
}

// NewLiveWith is NewWith with a level and format that Set can change later (Journal stays as given
// across Set).
func NewLiveWith(w io.Writer, o Options) *Live {
	l := &Live{w: w, isTTY: o.IsTTY, journal: o.Journal}
	l.Set(o.Level, o.Format)
	l.log = slog.New(NewRedactingHandler(&liveHandler{live: l}, o.Redactor))
	return l
}

// Logger is the logger to hand out; every record is scrubbed (NewRedactingHandler).
func (l *Live) Logger() *slog.Logger { return l.log }

// Set switches level and format for every logger derived from l; records already written stay.
func (l *Live) Set(level, format string) {
	l.level.Set(ParseLevel(level))
	h := formatHandler(l.w, &l.level, format, l.isTTY, l.journal)
	l.root.Store(&h)
}

// liveHandler replays its With/WithGroup steps onto the current format handler, rebuilding
// them only when Set swapped the handler (a pointer comparison per record otherwise).
type liveHandler struct {
	live  *Live
	steps []func(slog.Handler) slog.Handler
	built atomic.Pointer[builtHandler]
}

type builtHandler struct {
	root *slog.Handler
	h    slog.Handler
}

func (h *liveHandler) current() slog.Handler {
	root := h.live.root.Load()
	if b := h.built.Load(); b != nil && b.root == root {
		return b.h
	}
	out := *root
	for _, step := range h.steps {
		out = step(out)
	}
	h.built.Store(&builtHandler{root: root, h: out})
	return out
}

func (h *liveHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.live.level.Level() }

func (h *liveHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.current().Handle(ctx, r)
}

func (h *liveHandler) with(step func(slog.Handler) slog.Handler) slog.Handler {
	steps := append(append([]func(slog.Handler) slog.Handler(nil), h.steps...), step)
	return &liveHandler{live: h.live, steps: steps}
}

func (h *liveHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.with(func(n slog.Handler) slog.Handler { return n.WithAttrs(as) })
}

func (h *liveHandler) WithGroup(name string) slog.Handler {
	return h.with(func(n slog.Handler) slog.Handler { return n.WithGroup(name) })
}
