package scalesetdemand

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/fleet"
	"github.com/runner-manager/runner-manager/internal/scaleset"
	"github.com/runner-manager/runner-manager/journal"
)

// What the engine and the fleet ask of a Source: demand, registrations and the queue's news.

// learnLocked records runners that started a job and runners whose job completed, from this
// host's queue or the fleet leader's. Callers hold s.mu.
func (s *Source) learnLocked(identity string, started, completed []string) {
	k := s.knownLocked(identity)
	for _, name := range started {
		r := k[name]
		r.present, r.busy, r.looked = true, true, false
		k[name] = r
	}
	for _, name := range completed {
		// An ephemeral runner is removed by the service once its job is done.
		k[name] = knownRunner{}
	}
}

// SetNews is the fleet's fleet.SetSource: what this host's queue said of t's runners, and the set.
func (s *Source) SetNews(t config.Target) fleet.SetNews {
	out := fleet.SetNews{SetID: s.setIDOf(t)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.news[t.Identity()]; n != nil {
		for name := range n.busy {
			out.Busy = append(out.Busy, name)
		}
		slices.Sort(out.Busy)
		out.Done = slices.Clone(n.done)
	}
	return out
}

// HeardSet takes the fleet leader's news of t: this follower learns its runners' jobs from it.
func (s *Source) HeardSet(t config.Target, n fleet.SetNews) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.SetID != 0 {
		s.heard[t.Identity()] = n.SetID
	}
	s.learnLocked(t.Identity(), n.Busy, n.Done)
}

// setIDOf is t's scale set: ensured by this host's listener, or else published by the leader.
func (s *Source) setIDOf(t config.Target) int64 {
	if st := s.target(t.Name); st != nil && st.t.Identity() == t.Identity() {
		if id := st.setID(); id != 0 {
			return id
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heard[t.Identity()]
}

func (s *Source) knownLocked(identity string) map[string]knownRunner {
	k := s.known[identity]
	if k == nil {
		k = map[string]knownRunner{}
		s.known[identity] = k
	}
	return k
}

// capacity is X-ScaleSetMaxCapacity for st: min(max_runners, its live runners + the host's free
// slots), so the service never assigns more jobs than this host can start. While the target or the
// daemon drains it is the target's busy runners: no new job is assigned. A fleet's leader adds what
// the other hosts can run: their published starting, idle and free runners, and the set's running
// jobs that are not this host's.
func (s *Source) capacity(ctx context.Context, st *setTarget) int {
	own, busy, taking := s.ownCapacity(ctx, st.t.Name)
	if !taking || s.fleet == nil || !s.fleet.Joined() {
		return own
	}
	st.mu.Lock()
	l := st.listener
	st.mu.Unlock()
	running := 0
	if l != nil {
		running = l.Last().Statistics.TotalRunningJobs
	}
	return own + s.fleet.PeerRoom(st.t.Name) + max(running-busy, 0)
}

// ownCapacity is this host's capacity of target name, its busy runners of it, and whether it
// takes new jobs at all.
func (s *Source) ownCapacity(ctx context.Context, name string) (int, int, bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	live, err := s.o.Store.Live(ctx)
	if err != nil {
		return 0, 0, false // unknown: take no new job rather than one this host may not fit
	}
	s.mu.Lock()
	cfg := s.cfg
	s.mu.Unlock()
	busy := 0
	for _, a := range live {
		if a.Target == name && a.State == journal.StateBusy {
			busy++
		}
	}
	t, ok := cfg.Target(name)
	if !ok || !t.IsEnabled() || s.draining.Load() || t.Mode == "monitor" {
		return busy, busy, false
	}
	// What it holds and the hard room the journal's one rule gives it (journal.Room). The fair
	// share among targets bounds the engine's launches, not the jobs the service may assign: a job
	// assigned here waits for a slot of this target as a polled job waits for its target's share.
	// The bound in force: a schedule may lower max_runners for the hour (config.Target.InForce).
	room := journal.RoomOf(cfg.Daemon.MaxRunners, live)
	return room.Held(name) + room.Hard(name, t.InForce(s.o.Now()).MaxRunners), busy, true
}

func (s *Source) target(name string) *setTarget {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sets[name]
}

// errNotReady is the answer while a target's session is not open: no demand is known, so nothing
// is launched; the listener wakes the loop once it is.
type errNotReady struct{ msg string }

func (e *errNotReady) Error() string   { return e.msg }
func (e *errNotReady) Temporary() bool { return true }

// Queued is the jobs assigned to the set that no runner runs yet (ARC's min(min_idle + assigned,
// max_runners) then follows from the plan, busy runners holding the running ones). A monitor
// target also counts the jobs the service holds back (it takes none).
func (s *Source) Queued(ctx context.Context, t config.Target) ([]engine.Job, error) {
	st := s.target(t.Name)
	if st == nil || st.t.Identity() != t.Identity() {
		return nil, &errNotReady{msg: fmt.Sprintf("scale set %s: the listener is not running yet", t.ScaleSet)}
	}
	st.mu.Lock()
	open, waiting, lastErr, l, follower := st.open, st.waiting, st.lastErr, st.listener, st.follower
	st.mu.Unlock()
	switch {
	case follower:
		return nil, &errNotReady{msg: fmt.Sprintf("scale set %s: another host of the fleet holds its message session, and its leader's view of the queue did not come in time", t.ScaleSet)}
	case waiting != "":
		return nil, &errNotReady{msg: fmt.Sprintf("scale set %s: waiting for its message session: %s", t.ScaleSet, waiting)}
	case !open && lastErr != "":
		return nil, &errNotReady{msg: fmt.Sprintf("scale set %s: %s", t.ScaleSet, lastErr)}
	case !open || l == nil:
		return nil, &errNotReady{msg: fmt.Sprintf("scale set %s: the message session is not open yet", t.ScaleSet)}
	}
	d := l.Last()
	n := d.Waiting
	if t.Mode == "monitor" {
		n += d.Statistics.TotalAvailableJobs + d.Statistics.TotalAcquiredJobs
	}
	jobs := make([]engine.Job, n)
	return jobs, nil
}

// JITConfig registers a runner through the scale set's JIT endpoint; it carries the set's label.
func (s *Source) JITConfig(ctx context.Context, t config.Target, req engine.JITRequest) (engine.Registration, error) {
	id := s.setIDOf(t)
	if id == 0 {
		return engine.Registration{}, &errNotReady{msg: fmt.Sprintf("scale set %s is not set up yet", t.ScaleSet)}
	}
	c, err := s.client(t)
	if err != nil {
		return engine.Registration{}, err
	}
	jit, err := c.GenerateJIT(ctx, id, req.Name, req.WorkDir)
	if scaleset.Is(err, scaleset.ExcAgentExists) {
		return engine.Registration{}, &classedError{class: engine.ErrRunnerNameTaken, err: err}
	}
	if err != nil {
		return engine.Registration{}, s.o.Classify(err)
	}
	s.mu.Lock()
	s.knownLocked(t.Identity())[req.Name] = knownRunner{id: jit.Runner.ID, present: true}
	s.mu.Unlock()
	return engine.Registration{RunnerID: jit.Runner.ID, JITConfig: jit.Encoded}, nil
}

// Runners lists the registrations of this host's live attempts of t, as far as they exist.
func (s *Source) Runners(ctx context.Context, t config.Target) ([]engine.Runner, error) {
	live, err := s.o.Store.Live(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the journal: %w", err)
	}
	var c *scaleset.Client
	id := t.Identity()
	want := map[string]bool{}
	var out []engine.Runner
	for _, a := range live {
		if a.Target != t.Name || a.RunnerName == "" {
			continue
		}
		want[a.RunnerName] = true
		s.mu.Lock()
		r, ok := s.knownLocked(id)[a.RunnerName]
		s.mu.Unlock()
		inFlight := a.State == journal.StatePlanned || (a.State == journal.StateFailed && a.RunnerID == 0)
		if !ok || (r.looked && !r.present && inFlight) {
			if c == nil {
				if c, err = s.client(t); err != nil {
					return nil, err
				}
			}
			got, found, err := c.RunnerByName(ctx, a.RunnerName)
			if err != nil {
				return nil, s.o.Classify(err)
			}
			r = knownRunner{id: got.ID, present: found, looked: true}
			s.mu.Lock()
			s.knownLocked(id)[a.RunnerName] = r
			s.mu.Unlock()
		}
		if r.present {
			out = append(out, engine.Runner{ID: r.id, Name: a.RunnerName, Busy: r.busy})
		}
	}
	s.mu.Lock()
	for name := range s.known[id] {
		if !want[name] {
			delete(s.known[id], name)
		}
	}
	s.mu.Unlock()
	return out, nil
}

// DeleteRunner removes a registration through the Actions service: busy ones are refused.
func (s *Source) DeleteRunner(ctx context.Context, t config.Target, runnerID int64) error {
	c, err := s.client(t)
	if err != nil {
		return err
	}
	err = c.RemoveRunner(ctx, runnerID)
	if errors.Is(err, scaleset.ErrRunnerBusy) {
		return &classedError{class: engine.ErrRunnerBusy, err: err}
	}
	if err != nil {
		return s.o.Classify(err)
	}
	s.mu.Lock()
	for name, r := range s.known[t.Identity()] {
		if r.id == runnerID {
			s.known[t.Identity()][name] = knownRunner{}
		}
	}
	s.mu.Unlock()
	return nil
}

// Status is one scale-set target's view for status.
type Status struct {
	Identity                          string // the target's identity the listener serves (config.Target.Identity)
	Name, Session, Waiting, LastError string
	ID                                int64
	Statistics                        scaleset.Statistics
}

// Status is target name's listener as status shows it; false when it has none.
func (s *Source) Status(name string) (Status, bool) {
	st := s.target(name)
	if st == nil {
		return Status{}, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	out := Status{Identity: st.t.Identity(), Name: st.t.ScaleSet, Waiting: st.waiting, LastError: st.lastErr, Session: "opening"}
	if st.open {
		out.Session = "open"
	}
	if st.waiting != "" {
		out.Session = "waiting"
	}
	if st.follower {
		out.Session = "held by the fleet's leader"
	}
	if st.listener != nil {
		out.ID = st.listener.ScaleSet().ID
		out.Statistics = st.listener.Last().Statistics
	}
	return out, true
}

// classedError carries an engine sentinel (ErrRunnerBusy, ErrRunnerNameTaken) for errors.Is
// while its message stays the service's.
type classedError struct{ class, err error }

func (e *classedError) Error() string   { return e.err.Error() }
func (e *classedError) Unwrap() []error { return []error{e.class, e.err} }

// terminalError marks a failure retrying cannot fix (an api_url without a web host): the engine
// backs off as for any terminal error (engine.Classify reads Terminal).
type terminalError struct{ err error }

func (e *terminalError) Error() string  { return e.err.Error() }
func (e *terminalError) Unwrap() error  { return e.err }
func (e *terminalError) Terminal() bool { return true }
