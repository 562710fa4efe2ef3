// Package scalesetdemand is the scale-set demand source: the engine's Demand and Registrar for
// targets with scale_set (docs/operations.md, "Choosing a demand source"), beside polling and
// webhooks (internal/github). It owns each such target's listener and message session
// (internal/scaleset), the capacity it reports to the Actions service, what the queue says of
// this host's runners, and the end of a session once its target is gone and drained. It never
// decides how many runners to start (engine.plan does) and never holds the GitHub credential:
// registration tokens come from Options.Tokens.
package scalesetdemand

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/fleet"
	"github.com/runner-manager/runner-manager/internal/github"
	"github.com/runner-manager/runner-manager/internal/github/auth"
	"github.com/runner-manager/runner-manager/internal/scaleset"
	"github.com/runner-manager/runner-manager/journal"
)

// Account is what a target's scale set needs of its GitHub account.
type Account struct {
	APIURL string
	Tokens scaleset.RegistrationTokens
}

// Options are what a Source needs from the composition root.
type Options struct {
	// Account is the GitHub account a target's scale set lives in: its api_url in force ("" =
	// github.com) and its registration tokens, the only use of the credential. An error (an
	// account the config does not name) is terminal for the target.
	Account func(t config.Target) (Account, error)
	// Now is the clock a target's schedule is read by (nil: the wall clock).
	Now    func() time.Time
	Store  Store
	Owner  string // ownerName of the sessions: this host
	Logger *slog.Logger
	Wake   func(target string) // a pass of target now (the engine's Supervisor.Wake)
	Crash  engine.CrashHook    // the crash tests' kill points (nil in production)
	// Metrics, when set, is told of each session's state and the queue's counts.
	Metrics Metrics
	// Classify gives an Actions-service or token error the engine's error class methods
	// (engine.Classify); nil keeps errors as they are.
	Classify func(error) error
}

// Source is the engine's Demand and Registrar for targets with scale_set. It runs one
// scaleset.Listener per such target: demand is the queue's statistics, not a REST poll, and
// runners are registered through the set's JIT endpoint.
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
// A listener lives as long as its target's runners: a removed or disabled target's session is
// closed once the journal holds no live runner of it (retire), shutdown closes every session, and
// the listener's context ends a long poll in flight.
type Source struct {
	o       Options
	log     *slog.Logger
	sleep   func(ctx context.Context, d time.Duration) error
	backoff time.Duration // after a listener failed; default 10 s
	retire  time.Duration // how often a gone target's drain is checked; default 1 s
	fleet   Fleet         // nil without a [fleet]

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

// queueNews is what this host's queue said of runners, kept for the fleet's followers: who runs
// a job now, and whose job completed lately (newsDone of them).
type queueNews struct {
	busy map[string]bool
	done []string
}

const newsDone = 64

// Store is what a Source needs of the journal: the runners (for capacity, lookups and a gone
// target's drain) and the sessions' records (scaleset.Holder).
type Store interface {
	scaleset.Store
	Live(ctx context.Context) ([]journal.Attempt, error)
}

// Metrics is what a Source reports; *metrics.Metrics satisfies it.
type Metrics interface {
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
	retiring bool        // a watch for the gone target's drain runs (under Source.mu)
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

// New makes a Source; listeners start with Run.
func New(o Options) *Source {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Wake == nil {
		o.Wake = func(string) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Classify == nil {
		o.Classify = func(err error) error { return err }
	}
	return &Source{o: o, log: o.Logger, sleep: auth.Sleep,
		clients: map[string]*scaleset.Client{}, sets: map[string]*setTarget{}, known: map[string]map[string]knownRunner{},
		news: map[string]*queueNews{}, heard: map[string]int64{}, roles: make(chan struct{})}
}

// SetDraining says whether a daemon-wide drain (shutdown, upgrade) runs: while it does, the
// service is told this host takes no new job.
func (s *Source) SetDraining(on bool) { s.draining.Store(on) }

// client returns the Actions-service client of t's scope under the current api_url.
func (s *Source) client(t config.Target) (*scaleset.Client, error) {
	acct, err := s.o.Account(t)
	if err != nil {
		return nil, &terminalError{err: err}
	}
	api := acct.APIURL
	sc, err := github.ScopeOf(t)
	if err != nil {
		return nil, &terminalError{err: err}
	}
	// "org", "owner/repo" or "enterprises/<slug>", as the set's config URL spells it.
	scope := sc.String()
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
	c, err := scaleset.New(scaleset.Options{APIURL: api, WebURL: web, Scope: scope, Tokens: acct.Tokens, UserAgent: "runner-manager (scaleset)"})
	if err != nil {
		return nil, &terminalError{err: err}
	}
	s.clients[key] = c
	return c, nil
}

// Run starts the listeners of the config last applied and returns when ctx ends and every
// listener has closed its session (each within scaleset.Holder's bound).
func (s *Source) Run(ctx context.Context) {
	var cfg *config.Config
	s.mu.Lock()
	s.ctx, cfg = ctx, s.cfg
	s.mu.Unlock()
	if cfg != nil {
		s.Apply(cfg)
	}
	<-ctx.Done()
	s.wg.Wait()
}

// apply follows a newly applied config: a listener for every enabled scale-set target, restarted
// when what the set is made of changed (group, labels: the listener updates the set), stopped at
// once when the target now names another set or scope (its old runners drain without a session).
// A removed or disabled target keeps its listener until its last runner has drained (retire).
func (s *Source) Apply(cfg *config.Config) {
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
		ct, ok := cfg.Target(name)
		if ok {
			cur.heed(ct)
		}
		if (!ok || !ct.IsEnabled()) && !cur.retiring {
			cur.retiring = true
			s.wg.Add(1)
			go s.retireWhenDrained(s.ctx, name, cur)
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

func (s *Source) startLocked(t config.Target, prev *setTarget) {
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

// retireWhenDrained closes st's session once the journal holds no live runner of target name
// (its loop drains them through this source's Runners and DeleteRunner, so the set must stay
// until then), and deletes the set if the target asks for that. It stops watching when the
// config enables the target again (Apply keeps or restarts its listener) or ctx ends.
func (s *Source) retireWhenDrained(ctx context.Context, name string, st *setTarget) {
	defer s.wg.Done()
	for {
		live, err := s.o.Store.Live(ctx)
		if err == nil && s.retired(name, st, live) {
			return
		}
		if ctx.Err() != nil || s.sleep(ctx, s.retirePoll()) != nil {
			return
		}
	}
}

// retired decides, on the journal's live attempts, whether st's gone target is drained: then its
// listener is cancelled and marked removed (listen deletes the set if delete_scale_set_on_remove
// says so) and it reports true; it reports true too when the config enables the target again, and
// false while a runner of it is live. Pinned by TestRetireOnceDrained.
func (s *Source) retired(name string, st *setTarget, live []journal.Attempt) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ct, ok := s.cfg.Target(name); ok && ct.IsEnabled() || s.sets[name] != st {
		st.retiring = false
		return true
	}
	for _, a := range live {
		if a.Target == name && !a.State.Terminal() {
			return false
		}
	}
	delete(s.sets, name)
	st.remove.Store(true)
	st.cancel()
	return true
}

func (s *Source) retirePoll() time.Duration {
	if s.retire > 0 {
		return s.retire
	}
	return time.Second
}

// listen runs st's listener until ctx ends, backing off after each failure.
func (s *Source) listen(ctx context.Context, st *setTarget) {
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
		s.o.Wake(t.Name)
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

func (s *Source) retryIn() time.Duration {
	if s.backoff > 0 {
		return s.backoff
	}
	return 10 * time.Second
}

func (s *Source) listenOnce(ctx context.Context, st *setTarget, c *scaleset.Client, log *slog.Logger) error {
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
		Holder: &scaleset.Holder{Client: c, Store: s.o.Store, Key: "scaleset/" + t.Name, Owner: s.o.Owner,
			Waiting: func(reason string, retryIn time.Duration) {
				st.note(func() { st.open, st.waiting = false, reason })
				s.report(st, scaleset.Statistics{})
				log.Warn("scale-set session refused (409); retrying", "reason", reason, "retry_in", retryIn.Round(time.Second).String())
				s.o.Wake(t.Name)
			},
			Opened: func(sess *scaleset.Session) {
				log.Info("scale-set session open", "set_id", sess.SetID, "owner", s.o.Owner)
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
func (s *Source) report(st *setTarget, d scaleset.Statistics) {
	if s.o.Metrics == nil {
		return
	}
	st.mu.Lock()
	open := st.open
	st.mu.Unlock()
	s.o.Metrics.ScaleSet(st.t.Name, open, d.TotalAssignedJobs, d.TotalRunningJobs, d.TotalAvailableJobs)
}

// process takes one message's demand (before it is acknowledged; a redelivery repeats it, which
// is harmless): who started and finished a job, then a pass for the target.
func (s *Source) process(st *setTarget, d scaleset.Demand) {
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
	s.o.Wake(st.t.Name)
}

// Crash points of scale-set targets (besides the engine's, which hold for them too): the daemon
// kills itself there when RUNNER_MANAGER_TEST_CRASH_AT names them (e2e/crash).
const (
	CrashSessionJournaled engine.CrashPoint = "scaleset-session-journaled" // the session id is journaled
	CrashBeforeAck        engine.CrashPoint = "scaleset-before-ack"        // a message is processed, not acknowledged
)

func (s *Source) crashAt(p engine.CrashPoint, target string) {
	if s.o.Crash != nil {
		s.o.Crash(p, target)
	}
}
