package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// EventKind names what happened. Attempt state changes use the journal state's name.
type EventKind string

const (
	EventPlanned       EventKind = "planned"
	EventRegistered    EventKind = "registered"
	EventStarted       EventKind = "started"
	EventAdopted       EventKind = "adopted" // recovery found the runner alive and supervises it again
	EventBusy          EventKind = "busy"
	EventExited        EventKind = "exited"
	EventDeregistered  EventKind = "deregistered"
	EventCleaned       EventKind = "cleaned"
	EventFailed        EventKind = "failed"
	EventOrphan        EventKind = "orphan-deleted" // a registration of this host with no live runner
	EventReload        EventKind = "reload"
	EventReloadFailed  EventKind = "reload-failed"
	EventLoop          EventKind = "loop" // a target loop started, began draining, or ended
	EventBackoff       EventKind = "backoff"
	EventDemandPartial EventKind = "demand-partial" // some repositories' jobs could not be read; the rest are served
	EventDrain         EventKind = "drain"          // shutdown or upgrade drain began or ended
	EventDiskLow       EventKind = "disk-low"       // launches stopped for min_free_disk, or resumed
)

// Event is one operator-visible change, kept for `status` and logged.
type Event struct {
	Time    time.Time `json:"time"`
	Target  string    `json:"target,omitempty"`
	Attempt string    `json:"attempt,omitempty"`
	Kind    EventKind `json:"kind"`
	Message string    `json:"message"`
}

// eventLog is a bounded ring: the newest limit events survive.
type eventLog struct {
	mu    sync.Mutex
	buf   []Event
	next  int
	full  bool
	log   *slog.Logger
	clock Clock
}

func newEventLog(limit int, log *slog.Logger, clock Clock) *eventLog {
	return &eventLog{buf: make([]Event, limit), log: log, clock: clock}
}

// emit records and logs an event. Messages never carry secrets: callers pass names, ids and
// operator-facing reasons only, never a JIT config or token.
func (l *eventLog) emit(level slog.Level, target, attempt string, kind EventKind, msg string) {
	ev := Event{Time: l.clock.Now(), Target: target, Attempt: attempt, Kind: kind, Message: msg}
	l.mu.Lock()
	l.buf[l.next] = ev
	l.next = (l.next + 1) % len(l.buf)
	if l.next == 0 {
		l.full = true
	}
	l.mu.Unlock()
	attrs := []any{"kind", string(kind)}
	if target != "" {
		attrs = append(attrs, "target", target)
	}
	if attempt != "" {
		attrs = append(attrs, "attempt", attempt)
	}
	l.log.Log(context.Background(), level, msg, attrs...)
}

// recent returns the kept events, oldest first.
func (l *eventLog) recent() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.full {
		return append([]Event(nil), l.buf[:l.next]...)
	}
	out := append([]Event(nil), l.buf[l.next:]...)
	return append(out, l.buf[:l.next]...)
}
