package scaleset

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/runner-manager/runner-manager/internal/github/auth"
)

// Store keeps the holder's record across crashes; *journal.Journal satisfies it (PutMeta is one
// synced batch).
type Store interface {
	GetMeta(ctx context.Context, name string) ([]byte, bool, error)
	PutMeta(ctx context.Context, name string, value []byte) error
}

// sessions is what Holder needs of a Client (a fake in tests).
type sessions interface {
	CreateSession(ctx context.Context, setID int64, owner string) (*Session, error)
	DeleteSession(ctx context.Context, setID int64, sessionID string) error
}

// Record is the journaled state of one target's session. State "opening" is written before the
// create call, "open" with the id as soon as the answer arrives, "closed" after the delete.
type Record struct {
	State     string `json:"state"`
	SetID     int64  `json:"set_id"`
	SessionID string `json:"session_id,omitempty"`
	Owner     string `json:"owner"`
}

// Holder owns the message session of one scale set for one target: it is the unit a fleet would
// hand to one elected host. Open deletes a session this host journaled and never closed (a crash),
// so a restart is never locked out by its own stale session (ARC#3209).
type Holder struct {
	Client sessions
	Store  Store
	Key    string // journal name, e.g. "scaleset/<target>"
	Owner  string // ownerName: this host
	Sleep  func(ctx context.Context, d time.Duration) error
	Rand   func() float64 // [0,1); default math/rand/v2
	// Waiting is told why Open is waiting (another session holds the set) and for how long.
	Waiting func(reason string, retryIn time.Duration)
	// Opened is told of each session once its id is journaled (logs; the crash tests kill there).
	Opened func(*Session)
	// Predecessor, when set, names a session another host held on this set and can no longer
	// close (a fleet's previous leader, killed with it open): Open deletes it first, so the new
	// holder does not wait for GitHub to expire it. nil or false: none.
	Predecessor func() (Record, bool)
}

// ConflictRetryMin and ConflictRetryMax bound the wait between session creates refused with 409,
// as ARC's first listener did (scaleset.md section 4, "Backoff").
const (
	ConflictRetryMin = 30 * time.Second
	ConflictRetryMax = 45 * time.Second
)

func (h *Holder) load(ctx context.Context) (Record, error) {
	raw, ok, err := h.Store.GetMeta(ctx, h.Key)
	if err != nil || !ok {
		return Record{}, err
	}
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return Record{}, fmt.Errorf("journal record %s is unreadable: %w; it is replaced on the next open", h.Key, err)
	}
	return r, nil
}

func (h *Holder) save(ctx context.Context, r Record) error {
	b, _ := json.Marshal(r)
	if err := h.Store.PutMeta(ctx, h.Key, b); err != nil {
		return fmt.Errorf("journal the scale-set session (%s): %w; check the state dir", r.State, err)
	}
	return nil
}

// Open opens a session on set setID. It first deletes any session this host journaled as open;
// then journals the intent, creates, and journals the id. A 409 with nothing of ours journaled (a
// kill between answer and journal write, or another host) is retried 30-45 s apart until the stale
// session expires or ctx ends, telling Waiting why.
func (h *Holder) Open(ctx context.Context, setID int64) (*Session, error) {
	prev, err := h.load(ctx)
	if err != nil {
		prev = Record{}
	}
	if prev.SessionID != "" && prev.State == "open" {
		if err := h.Client.DeleteSession(ctx, prev.SetID, prev.SessionID); err != nil {
			return nil, fmt.Errorf("close this host's session %s left from before a restart: %w", prev.SessionID, err)
		}
	}
	if h.Predecessor != nil {
		if p, ok := h.Predecessor(); ok && p.SessionID != "" && p.SessionID != prev.SessionID {
			if err := h.Client.DeleteSession(ctx, p.SetID, p.SessionID); err != nil {
				return nil, fmt.Errorf("close session %s that %s held on scale set %d: %w", p.SessionID, p.Owner, p.SetID, err)
			}
		}
	}
	if err := h.save(ctx, Record{State: "opening", SetID: setID, Owner: h.Owner}); err != nil {
		return nil, err
	}
	for {
		s, err := h.Client.CreateSession(ctx, setID, h.Owner)
		if err == nil {
			// If this write is lost to a crash, the next start meets its own session as a 409 and
			// waits for it to expire: slower, never wrong.
			if err := h.save(ctx, Record{State: "open", SetID: setID, SessionID: s.ID, Owner: h.Owner}); err != nil {
				_ = h.Client.DeleteSession(context.WithoutCancel(ctx), setID, s.ID)
				return nil, err
			}
			if h.Opened != nil {
				h.Opened(s)
			}
			return s, nil
		}
		if !Is(err, ExcSessionConflict) {
			return nil, err
		}
		d := h.retryIn()
		if h.Waiting != nil {
			h.Waiting(fmt.Sprintf("another session holds scale set %d (%v): another host uses this scale set, or a previous run of this host was killed before it journaled its session; retrying until GitHub expires it", setID, err), d)
		}
		if err := h.sleep(ctx, d); err != nil {
			return nil, err
		}
	}
}

// Close deletes the session and journals that it is closed. It runs even when ctx is done, under
// a bounded context, because a session left open blocks the next start.
func (h *Holder) Close(ctx context.Context, s *Session) error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := h.Client.DeleteSession(ctx, s.SetID, s.ID); err != nil {
		return fmt.Errorf("close %s: %w; GitHub expires it eventually, a restart deletes it first", s, err)
	}
	return h.save(ctx, Record{State: "closed", SetID: s.SetID, Owner: h.Owner})
}

func (h *Holder) retryIn() time.Duration {
	r := rand.Float64
	if h.Rand != nil {
		r = h.Rand
	}
	return ConflictRetryMin + time.Duration(r()*float64(ConflictRetryMax-ConflictRetryMin))
}

func (h *Holder) sleep(ctx context.Context, d time.Duration) error {
	if h.Sleep != nil {
		return h.Sleep(ctx, d)
	}
	return auth.Sleep(ctx, d)
}
