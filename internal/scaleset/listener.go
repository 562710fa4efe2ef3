package scaleset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Demand is what the queue says about a scale set, as of the last message or session.
type Demand struct {
	Statistics Statistics
	// Waiting is the jobs assigned to the set that no runner runs yet: the runners to have ready
	// beyond min_idle. ARC's desired count min(min_idle + assigned, max) follows, since running
	// jobs hold busy runners already.
	Waiting int
	// Started and Completed name the runners the messages reported (liveness from the queue:
	// scale-set runners carry no online status).
	Started, Completed []string
	At                 time.Time
	// MessageID is the message this demand came in (not yet acknowledged while Process runs); 0
	// for the statistics a session opened with.
	MessageID int64
}

// Listener keeps one scale set's demand current: it ensures the set exists as configured, opens
// its session through Holder, long-polls with the capacity Capacity reports on every GET, hands
// each message to Process and only then acknowledges it (a crash in between means redelivery, so
// Process must be idempotent), acquires JobAvailable jobs (GHES), and on return deletes the session.
type Listener struct {
	Client *Client
	Holder *Holder
	Want   ScaleSet // name, group id, labels: created or updated to match
	// MovedFrom is the group the set may still be in (a reload changed the target's group): a set
	// found there by name is moved by PATCH instead of a second one being created. 0: none.
	MovedFrom int64
	// Capacity is X-ScaleSetMaxCapacity: min(max_runners, live runners + free host slots).
	Capacity func() int
	// Process is called with each message's demand before it is acknowledged.
	Process func(Demand)
	// LabelsDropped, if set, is told the labels GitHub kept when it kept fewer than Want's: a
	// GitHub without custom scale-set labels keeps the first only, silently.
	LabelsDropped func(kept []string)
	Now           func() time.Time
	// Backoff is the wait after a failed poll; default 5 s.
	Backoff time.Duration

	mu   sync.Mutex
	last Demand
	set  ScaleSet
}

// Last returns the latest demand (zero before the session opened).
func (l *Listener) Last() Demand {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// ScaleSet returns the set as ensured (zero before Run got that far).
func (l *Listener) ScaleSet() ScaleSet {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.set
}

// Ensure finds the set by name in its group and creates it, or updates it when its labels or
// group differ from Want.
func (l *Listener) Ensure(ctx context.Context) (ScaleSet, error) {
	got, ok, err := l.Client.ScaleSetByName(ctx, l.Want.RunnerGroupID, l.Want.Name)
	if err == nil && !ok && l.MovedFrom != 0 && l.MovedFrom != l.Want.RunnerGroupID {
		got, ok, err = l.Client.ScaleSetByName(ctx, l.MovedFrom, l.Want.Name)
	}
	switch {
	case err != nil:
		return ScaleSet{}, err
	case !ok:
		got, err = l.Client.CreateScaleSet(ctx, l.Want)
	case !slices.Equal(got.Labels, l.Want.Labels) || got.RunnerGroupID != l.Want.RunnerGroupID || got.DisableUpdate != l.Want.DisableUpdate:
		got, err = l.Client.UpdateScaleSet(ctx, got.ID, l.Want)
	}
	if err != nil {
		return ScaleSet{}, err
	}
	if l.LabelsDropped != nil && len(got.Labels) < len(l.Want.Labels) {
		l.LabelsDropped(got.Labels)
	}
	l.mu.Lock()
	l.set = got
	l.mu.Unlock()
	return got, nil
}

// Run ensures the set, opens the session and listens until ctx ends; then it deletes the session
// (cancelling ctx also ends a long poll in flight). It returns ctx's error, or the first error it
// cannot get past (the caller backs off and calls again).
func (l *Listener) Run(ctx context.Context) error {
	set, err := l.Ensure(ctx)
	if err != nil {
		return err
	}
	for {
		sess, err := l.Holder.Open(ctx, set.ID)
		if err != nil {
			return err
		}
		l.record(Demand{Statistics: sess.Statistics})
		err = l.listen(ctx, sess)
		cerr := l.Holder.Close(ctx, sess)
		if errors.Is(err, ErrSessionLost) && ctx.Err() == nil {
			continue // refresh refused: open a new session (scaleset PR #123)
		}
		if ctx.Err() != nil {
			return errors.Join(ctx.Err(), cerr)
		}
		return errors.Join(err, cerr)
	}
}

func (l *Listener) listen(ctx context.Context, sess *Session) error {
	var last int64
	for {
		m, err := l.Client.GetMessage(ctx, sess, last, max(l.Capacity(), 0))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if errors.Is(err, ErrSessionLost) || !Temporary(err) {
				return err
			}
			if err := l.Holder.sleep(ctx, l.backoff()); err != nil {
				return err
			}
			continue
		}
		if m == nil {
			continue
		}
		if err := l.handle(ctx, sess, m); err != nil {
			return err
		}
		last = m.ID
	}
}

// handle processes one message, then acknowledges it (scaleset.md section 3, "Processing order").
func (l *Listener) handle(ctx context.Context, sess *Session, m *Message) error {
	var avail []int64
	for _, j := range m.Jobs {
		if j.MessageType == "JobAvailable" {
			avail = append(avail, j.RunnerRequestID)
		}
	}
	if len(avail) > 0 {
		if _, err := l.Client.AcquireJobs(ctx, sess, avail); err != nil {
			return fmt.Errorf("acquire %d available jobs: %w", len(avail), err)
		}
	}
	d := Demand{Statistics: m.Statistics, MessageID: m.ID}
	for _, j := range m.Jobs {
		switch j.MessageType {
		case "JobStarted":
			d.Started = append(d.Started, j.RunnerName)
		case "JobCompleted":
			if j.RunnerName != "" {
				d.Completed = append(d.Completed, j.RunnerName)
			}
		}
	}
	l.record(d)
	if err := l.Client.DeleteMessage(ctx, sess, m.ID); err != nil {
		return fmt.Errorf("acknowledge message %d: %w", m.ID, err)
	}
	return nil
}

func (l *Listener) record(d Demand) {
	d.Waiting = max(d.Statistics.TotalAssignedJobs-d.Statistics.TotalRunningJobs, 0)
	if l.Now != nil {
		d.At = l.Now()
	}
	l.mu.Lock()
	l.last = d
	l.mu.Unlock()
	if l.Process != nil {
		l.Process(d)
	}
}

func (l *Listener) backoff() time.Duration {
	if l.Backoff > 0 {
		return l.Backoff
	}
	return 5 * time.Second
}

// Temporary reports whether err is worth another poll: network trouble, 429, 5xx.
func Temporary(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	return true
}
