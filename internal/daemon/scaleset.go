package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/fleet"
	"github.com/runner-manager/runner-manager/internal/github/auth"
	"github.com/runner-manager/runner-manager/internal/metrics"
	"github.com/runner-manager/runner-manager/internal/scaleset"
	"github.com/runner-manager/runner-manager/journal"
)

// scaleSets is the engine's Demand and Registrar for targets with scale_set (docs/operations.md,
// "Choosing a demand source"). It runs one scaleset.Listener per such target: demand is the
// queue's statistics, not a REST poll, and runners are registered through the set's JIT endpoint.
// Scale-set runners have no REST listing and no online status, so Runners answers from what this
// host knows (its JIT answers, the queue's JobStarted and JobCompleted) and looks a name up at the
// Actions service only for an attempt it knows nothing of (after a restart) or whose registration
// may still land (a planned attempt).
//
// In a fleet only the target's elected leader holds the session (GitHub allows one per set): the
// listener of every other host waits for the leadership, and ends its session as soon as the
// leadership is lost. The leader's queue news travels in its fleet view (SetNews); followers take
// it (HeardSet) and register through the set's JIT endpoint with the set id it carries. A host
// that is not joined (etcd unreachable) holds the session if it can, as without a fleet.
//
// A listener lives as long as its target's loop: a removed target's session is closed once its
// last runner has drained (the engine's ForgetTarget), shutdown closes every session, and the
// listener's context ends a long poll in flight.
type scaleSets struct {
	gh      *gitHub // registration tokens: the only use of the GitHub credential
	store   setStore
	owner   string // ownerName of the sessions: this host
	log     *slog.Logger
	wake    func(target string)
	sleep   func(ctx context.Context, d time.Duration) error
	backoff time.Duration    // after a listener failed; default 10 s
	crash   engine.CrashHook // the crash tests' kill points (nil in production)
	metrics setMetrics       // nil: none
	fleet   setFleet         // nil without a [fleet]

	draining atomic.Bool // a daemon-wide drain (shutdown, upgrade) has begun

	mu      sync.Mutex
	ctx     context.Context // the listeners' parent; nil until run
	cfg     *config.Config
	clients map[string]*scaleset.Client       // by api_url + scope
	sets    map[string]*setTarget             // by target name
	known   map[string]map[string]knownRunner // identity -> runner name -> what is known
	news    map[string]*queueNews             // identity -> what this host's queue said (for the fleet)
	heard   map[string]int64                  // identity -> set id the fleet's leader published
	roles   chan struct{}                     // closed and replaced when the fleet's roles change
	wg      sync.WaitGroup
}

// setFleet is what scaleSets needs of the fleet (*fleet.Fleet): who holds a target's session,
// where the previous holder's session is recorded, and how much the other hosts can run.
type setFleet interface {
	Joined() bool
	Leads(target string) bool
	PublishSession(ctx context.Context, target string, rec fleet.SessionRecord)
	Session(target string) (fleet.SessionRecord, bool)
	PeerRoom(target string) int
}

// queueNews is what this host's queue said of runners, kept for the fleet's followers: who runs
// a job now, and whose job completed lately (newsDone of them).
type queueNews struct {
	busy map[string]bool
	done []string
}

const newsDone = 64

// setStore is what scaleSets needs of the journal: the runners (for capacity and lookups) and
// the sessions' records (scaleset.Holder).
type setStore interface {
	scaleset.Store
	Live(ctx context.Context) ([]journal.Attempt, error)
}

// setMetrics is what scaleSets reports; *metrics.Metrics satisfies it.
type setMetrics interface {
	ScaleSet(target string, open bool, assigned, running, available int)
}

// knownRunner is what this host knows of one scale-set registration. looked marks knowledge from
// a lookup by name, which a registration still in flight can make stale.
type knownRunner struct {
	id      int64
	present bool
	busy    bool
	looked  bool
}

// setTarget is one target's listener.
type setTarget struct {
	t        config.Target
	listener *scaleset.Listener
	cancel   context.CancelFunc
	done     chan struct{}
	remove   atomic.Bool // the target is gone: delete the set too if it asks so
	// deleteOnRemove is the target's delete_scale_set_on_remove as last applied.
	deleteOnRemove atomic.Bool
	moved          bool // a reload changed runner_group: the set may still be in movedFrom
	movedFrom      string

	mu       sync.Mutex
	open     bool
	waiting  string // why the session cannot be opened yet (409)
	lastErr  string
	follower bool // another host of the fleet holds the session
}

func newScaleSets(gh *gitHub, store setStore, owner string, log *slog.Logger, wake func(string)) *scaleSets {
	return &scaleSets{gh: gh, store: store, owner: owner, log: log, wake: wake, sleep: auth.Sleep,
		clients: map[string]*scaleset.Client{}, sets: map[string]*setTarget{}, known: map[string]map[string]knownRunner{},
		news: map[string]*queueNews{}, heard: map[string]int64{}, roles: make(chan struct{})}
}

// rolesChanged is the fleet's word that a leadership or the membership changed: each listener
// checks whether it should hold its session now.
func (s *scaleSets) rolesChanged() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.roles)
	s.roles = make(chan struct{})
}

func (s *scaleSets) rolesCh() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.roles
}

// holds says whether this host should hold target's session: alone, or as the fleet's leader.
func (s *scaleSets) holds(target string) bool {
	return s.fleet == nil || !s.fleet.Joined() || s.fleet.Leads(target)
}

// holding waits until this host should hold st's session and returns a context that ends when it
// should no longer (false: ctx ended first).
func (s *scaleSets) holding(ctx context.Context, st *setTarget) (context.Context, context.CancelFunc, bool) {
	name := st.t.Name
	for {
		ch := s.rolesCh()
		if s.holds(name) {
			break
		}
		st.note(func() { st.open, st.waiting, st.lastErr, st.follower = false, "", "", true })
		select {
		case <-ctx.Done():
			return nil, nil, false
		case <-ch:
		}
	}
	st.note(func() { st.follower = false })
	lctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			ch := s.rolesCh()
			if !s.holds(name) {
				cancel()
				return
			}
			select {
			case <-lctx.Done():
				return
			case <-ch:
			}
		}
	}()
	return lctx, cancel, true
}

// tokens mints registration tokens with the client the [github] section currently builds.
type tokens struct{ gh *gitHub }

func (t tokens) RegistrationToken(ctx context.Context, scope string) (string, error) {
	c, err := t.gh.get()
	if err != nil {
		return "", err
	}
	return c.RegistrationToken(ctx, scope)
}

// client returns the Actions-service client of t's scope under its account's current api_url.
func (s *scaleSets) client(t config.Target) (*scaleset.Client, error) {
	gh, err := s.gh.forTarget(t)
	if err != nil {
		return nil, err
	}
	gh.mu.Lock()
	api := gh.cfg.APIURL
	gh.mu.Unlock()
	scope, err := scaleSetScope(t)
	if err != nil {
		return nil, err
	}
	key := t.Account + " " + api + " " + scope
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[key]; ok {
		return c, nil
	}
	web, err := auth.WebURLFor(api)
	if err != nil {
		return nil, &terminalError{err: err}
	}
	c, err := scaleset.New(scaleset.Options{APIURL: api, WebURL: web, Scope: scope, Tokens: tokens{gh}, UserAgent: "runner-manager (scaleset)"})
	if err != nil {
		return nil, &terminalError{err: err}
	}
	s.clients[key] = c
	return c, nil
}

// run starts the listeners of cfg and returns when ctx ends and every listener has closed its
// session (each within scaleset.Holder's bound).
func (s *scaleSets) run(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	cfg := s.cfg
	s.mu.Unlock()
	if cfg != nil {
		s.apply(cfg)
	}
	<-ctx.Done()
	s.wg.Wait()
}

// apply follows a newly applied config: a listener for every enabled scale-set target, restarted
// when what the set is made of changed (group, labels: the listener updates the set), stopped at
// once when the target now names another set or scope (its old runners drain without a session).
// A removed or disabled target keeps its listener until its last runner has drained (forget).
func (s *scaleSets) apply(cfg *config.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = cfg
	if s.ctx == nil || s.ctx.Err() != nil {
		return // run starts them; after it, nothing starts
	}
	for _, t := range cfg.EnabledTargets() {
		cur := s.sets[t.Name]
		if cur != nil && cur.t.Identity() == t.Identity() && cur.t.RunnerGroup == t.RunnerGroup && slices.Equal(cur.t.ScaleSetLabels(), t.ScaleSetLabels()) {
			continue
		}
		if cur != nil {
			cur.cancel() // re-pointed or regrouped: the new listener waits for the old session to close
		}
		if t.ScaleSet == "" {
			delete(s.sets, t.Name)
			continue
		}
		s.startLocked(t, cur)
	}
	for name, cur := range s.sets {
		if ct, ok := cfg.Target(name); ok {
			cur.heed(ct)
		}
	}
}

// heed takes ct's delete_scale_set_on_remove as st's when ct still names st's set: a disabled
// entry, or the last word before removal, says whether to delete the set.
func (st *setTarget) heed(ct config.Target) {
	if ct.ScaleSet == st.t.ScaleSet {
		st.deleteOnRemove.Store(ct.DeleteScaleSetOnRemove)
	}
}

func (s *scaleSets) startLocked(t config.Target, prev *setTarget) {
	ctx, cancel := context.WithCancel(s.ctx)
	st := &setTarget{t: t, cancel: cancel, done: make(chan struct{})}
	st.deleteOnRemove.Store(t.DeleteScaleSetOnRemove)
	if prev != nil && prev.t.Identity() == t.Identity() {
		st.moved, st.movedFrom = true, prev.t.RunnerGroup // resolved to an id by the listener
	}
	s.sets[t.Name] = st
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(st.done)
		if prev != nil {
			<-prev.done
		}
		s.listen(ctx, st)
	}()
}

// forget is the engine's word that target name's last loop has ended and cfg, the config the
// engine runs now, no longer enables it: its session is closed now, and its set deleted if the
// target asked for that (a disabled target's word in cfg, else the last one apply stored). It is
// called under the supervisor's lock, so it only starts the close. cfg, not the config apply last
// had: the daemon hands a config to apply after the engine took it, and a removed target's loop
// with no runner ends at once, often before apply (its session was then never closed).
func (s *scaleSets) forget(name string, cfg *config.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sets[name]
	if st == nil {
		return
	}
	if cfg != nil {
		if ct, ok := cfg.Target(name); ok {
			if ct.IsEnabled() {
				return // enabled again since the loop ended: apply keeps or restarts its listener
			}
			st.heed(ct)
		}
	}
	delete(s.sets, name)
	st.remove.Store(true)
	st.cancel()
}

// listen runs st's listener until ctx ends, backing off after each failure.
func (s *scaleSets) listen(ctx context.Context, st *setTarget) {
	t := st.t
	log := s.log.With("target", t.Name, "scale_set", t.ScaleSet)
	c, err := s.client(t)
	for err == nil && ctx.Err() == nil {
		lctx, cancel, ok := s.holding(ctx, st)
		if !ok {
			break
		}
		err = s.listenOnce(lctx, st, c, log)
		lost := lctx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			break
		}
		if lost { // another host of the fleet leads the target now; this one closed its session
			log.Info("scale-set session closed: another host of the fleet leads the target now")
			st.note(func() { st.open, st.waiting, st.lastErr = false, "", "" })
			s.report(st, scaleset.Statistics{})
			err = nil
			continue
		}
		st.note(func() { st.open, st.lastErr = false, err.Error() })
		s.report(st, scaleset.Statistics{})
		log.Warn("scale-set listener failed; retrying", "err", err, "retry_in", s.retryIn().String())
		s.wake(t.Name)
		if s.sleep(ctx, s.retryIn()) != nil {
			break
		}
		err = nil
	}
	if err != nil && ctx.Err() == nil {
		log.Error("scale-set target cannot be served", "err", err)
	}
	if st.remove.Load() && st.deleteOnRemove.Load() {
		if id := st.setID(); id != 0 {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if err := c.DeleteScaleSet(dctx, id); err != nil {
				log.Error("delete the scale set of a removed target (delete_scale_set_on_remove): delete it in the organization's settings", "err", err)
			} else {
				log.Info("scale set deleted (delete_scale_set_on_remove)", "id", id)
			}
		}
	}
}

func (s *scaleSets) retryIn() time.Duration {
	if s.backoff > 0 {
		return s.backoff
	}
	return 10 * time.Second
}

func (s *scaleSets) listenOnce(ctx context.Context, st *setTarget, c *scaleset.Client, log *slog.Logger) error {
	t := st.t
	group, err := c.RunnerGroupID(ctx, t.RunnerGroup)
	if err != nil {
		return err
	}
	var from int64
	if st.moved {
		if from, err = c.RunnerGroupID(ctx, st.movedFrom); err != nil {
			return err
		}
	}
	l := &scaleset.Listener{
		Client: c,
		Holder: &scaleset.Holder{Client: c, Store: s.store, Key: "scaleset/" + t.Name, Owner: s.owner,
			Waiting: func(reason string, retryIn time.Duration) {
				st.note(func() { st.open, st.waiting = false, reason })
				s.report(st, scaleset.Statistics{})
				log.Warn("scale-set session refused (409); retrying", "reason", reason, "retry_in", retryIn.Round(time.Second).String())
				s.wake(t.Name)
			},
			Opened: func(sess *scaleset.Session) {
				log.Info("scale-set session open", "set_id", sess.SetID, "owner", s.owner)
				if s.fleet != nil {
					s.fleet.PublishSession(ctx, t.Name, fleet.SessionRecord{SetID: sess.SetID, SessionID: sess.ID})
				}
				s.crashAt(CrashSessionJournaled, t.Name)
			},
			Predecessor: func() (scaleset.Record, bool) {
				if s.fleet == nil {
					return scaleset.Record{}, false
				}
				rec, ok := s.fleet.Session(t.Name)
				return scaleset.Record{SetID: rec.SetID, SessionID: rec.SessionID, Owner: "host " + rec.Host}, ok
			}},
		Want: scaleset.ScaleSet{Name: t.ScaleSet, RunnerGroupID: group, Labels: t.ScaleSetLabels()},
		LabelsDropped: func(kept []string) {
			log.Warn("GitHub dropped the scale set's custom labels: jobs reach it only by the labels kept; custom scale-set labels need GHES 3.18+ with DistributedTask.AllowRunnerScaleSetCustomLabels",
				"labels", t.ScaleSetLabels(), "kept", kept)
		},
		MovedFrom: from,
		Capacity:  func() int { return s.capacity(ctx, st) },
		Process:   func(d scaleset.Demand) { s.process(st, d) },
	}
	st.mu.Lock()
	st.listener = l
	st.mu.Unlock()
	return l.Run(ctx)
}

func (st *setTarget) setID() int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.listener == nil {
		return 0
	}
	return st.listener.ScaleSet().ID
}

func (st *setTarget) note(f func()) {
	st.mu.Lock()
	defer st.mu.Unlock()
	f()
}

// report gives the metrics st's session state and the queue's counts in d.
func (s *scaleSets) report(st *setTarget, d scaleset.Statistics) {
	if s.metrics == nil {
		return
	}
	st.mu.Lock()
	open := st.open
	st.mu.Unlock()
	s.metrics.ScaleSet(st.t.Name, open, d.TotalAssignedJobs, d.TotalRunningJobs, d.TotalAvailableJobs)
}

// process takes one message's demand (before it is acknowledged; a redelivery repeats it, which
// is harmless): who started and finished a job, then a pass for the target.
func (s *scaleSets) process(st *setTarget, d scaleset.Demand) {
	st.note(func() { st.open, st.waiting, st.lastErr = true, "", "" })
	s.report(st, d.Statistics)
	id := st.t.Identity()
	s.mu.Lock()
	s.learnLocked(id, d.Started, d.Completed)
	n := s.news[id]
	if n == nil {
		n = &queueNews{busy: map[string]bool{}}
		s.news[id] = n
	}
	for _, name := range d.Started {
		n.busy[name] = true
	}
	for _, name := range d.Completed {
		delete(n.busy, name)
		n.done = append(n.done, name)
	}
	n.done = n.done[max(len(n.done)-newsDone, 0):]
	s.mu.Unlock()
	if d.MessageID != 0 {
		s.crashAt(CrashBeforeAck, st.t.Name)
	}
	s.wake(st.t.Name)
}

// Crash points of scale-set targets (besides the engine's, which hold for them too): the daemon
// kills itself there when RUNNER_MANAGER_TEST_CRASH_AT names them (e2e/crash).
const (
	CrashSessionJournaled engine.CrashPoint = "scaleset-session-journaled" // the session id is journaled
	CrashBeforeAck        engine.CrashPoint = "scaleset-before-ack"        // a message is processed, not acknowledged
)

func (s *scaleSets) crashAt(p engine.CrashPoint, target string) {
	if s.crash != nil {
		s.crash(p, target)
	}
}

// learnLocked records runners that started a job and runners whose job completed, from this
// host's queue or the fleet leader's. Callers hold s.mu.
func (s *scaleSets) learnLocked(identity string, started, completed []string) {
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
func (s *scaleSets) SetNews(t config.Target) fleet.SetNews {
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
func (s *scaleSets) HeardSet(t config.Target, n fleet.SetNews) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.SetID != 0 {
		s.heard[t.Identity()] = n.SetID
	}
	s.learnLocked(t.Identity(), n.Busy, n.Done)
}

// setIDOf is t's scale set: ensured by this host's listener, or else published by the leader.
func (s *scaleSets) setIDOf(t config.Target) int64 {
	if st := s.target(t.Name); st != nil && st.t.Identity() == t.Identity() {
		if id := st.setID(); id != 0 {
			return id
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heard[t.Identity()]
}

func (s *scaleSets) knownLocked(identity string) map[string]knownRunner {
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
func (s *scaleSets) capacity(ctx context.Context, st *setTarget) int {
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
func (s *scaleSets) ownCapacity(ctx context.Context, name string) (int, int, bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	live, err := s.store.Live(ctx)
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
	room := journal.RoomOf(cfg.Daemon.MaxRunners, live)
	return room.Held(name) + room.Hard(name, t.MaxRunners), busy, true
}

func (s *scaleSets) target(name string) *setTarget {
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
func (s *scaleSets) Queued(ctx context.Context, t config.Target) ([]engine.Job, error) {
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
func (s *scaleSets) JITConfig(ctx context.Context, t config.Target, req engine.JITRequest) (engine.Registration, error) {
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
		return engine.Registration{}, classed(engine.ErrRunnerNameTaken, err)
	}
	if err != nil {
		return engine.Registration{}, classify(err)
	}
	s.mu.Lock()
	s.knownLocked(t.Identity())[req.Name] = knownRunner{id: jit.Runner.ID, present: true}
	s.mu.Unlock()
	return engine.Registration{RunnerID: jit.Runner.ID, JITConfig: jit.Encoded}, nil
}

// Runners lists the registrations of this host's live attempts of t, as far as they exist.
func (s *scaleSets) Runners(ctx context.Context, t config.Target) ([]engine.Runner, error) {
	live, err := s.store.Live(ctx)
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
				return nil, classify(err)
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
func (s *scaleSets) DeleteRunner(ctx context.Context, t config.Target, runnerID int64) error {
	c, err := s.client(t)
	if err != nil {
		return err
	}
	err = c.RemoveRunner(ctx, runnerID)
	if errors.Is(err, scaleset.ErrRunnerBusy) {
		return classed(engine.ErrRunnerBusy, err)
	}
	if err != nil {
		return classify(err)
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

// setStatus is one scale-set target's view for status.
type setStatus struct {
	identity                          string
	Name, Session, Waiting, LastError string
	ID                                int64
	Statistics                        scaleset.Statistics
}

func (s *scaleSets) status(name string) (setStatus, bool) {
	st := s.target(name)
	if st == nil {
		return setStatus{}, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	out := setStatus{identity: st.t.Identity(), Name: st.t.ScaleSet, Waiting: st.waiting, LastError: st.lastErr, Session: "opening"}
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

// demandFor routes the engine's calls by target: scale-set targets to the Actions service, the
// others to the REST API (polling, or webhook-fed).
type demandFor struct {
	rest *gitHub
	sets *scaleSets
}

func (d demandFor) Queued(ctx context.Context, t config.Target) ([]engine.Job, error) {
	if t.ScaleSet != "" {
		return d.sets.Queued(ctx, t)
	}
	return d.rest.Queued(ctx, t)
}

func (d demandFor) JITConfig(ctx context.Context, t config.Target, req engine.JITRequest) (engine.Registration, error) {
	if t.ScaleSet != "" {
		return d.sets.JITConfig(ctx, t, req)
	}
	return d.rest.JITConfig(ctx, t, req)
}

func (d demandFor) Runners(ctx context.Context, t config.Target) ([]engine.Runner, error) {
	if t.ScaleSet != "" {
		return d.sets.Runners(ctx, t)
	}
	return d.rest.Runners(ctx, t)
}

// SetNews and HeardSet make demandFor the fleet's fleet.SetSource (scale-set targets only).
func (d demandFor) SetNews(t config.Target) fleet.SetNews { return d.sets.SetNews(t) }

func (d demandFor) HeardSet(t config.Target, n fleet.SetNews) { d.sets.HeardSet(t, n) }

func (d demandFor) DeleteRunner(ctx context.Context, t config.Target, runnerID int64) error {
	if t.ScaleSet != "" {
		return d.sets.DeleteRunner(ctx, t, runnerID)
	}
	return d.rest.DeleteRunner(ctx, t, runnerID)
}

// observer is the engine's Observer: the metrics, plus the end of a removed scale-set target's
// session once its last runner has drained.
type observer struct {
	*metrics.Metrics
	sets    *scaleSets
	current func() *config.Config // the engine's config (Supervisor.Config)
}

func (o observer) ForgetTarget(target string) {
	o.Metrics.ForgetTarget(target)
	o.sets.forget(target, o.current())
}
