package fleet

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/fleet/etcdtest"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

// github is the fake GitHub behind the decorators: it counts reads, so a test sees who read it.
type github struct {
	mu      sync.Mutex
	jobs    []engine.Job
	runners []engine.Runner
	reads   atomic.Int64
}

func (g *github) Queued(context.Context, config.Target) ([]engine.Job, error) {
	g.reads.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]engine.Job(nil), g.jobs...), nil
}

func (g *github) Runners(context.Context, config.Target) ([]engine.Runner, error) {
	g.reads.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]engine.Runner(nil), g.runners...), nil
}

func (g *github) JITConfig(context.Context, config.Target, engine.JITRequest) (engine.Registration, error) {
	return engine.Registration{}, errors.New("not used")
}
func (g *github) DeleteRunner(context.Context, config.Target, int64) error { return nil }

func (g *github) queue(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.jobs = nil
	for i := range n {
		g.jobs = append(g.jobs, engine.Job{ID: int64(i + 1), Labels: []string{"linux"}})
	}
}

var target = config.Target{Name: "web", Repository: "acme/web", Labels: []string{"linux"}, MaxRunners: 10, Mode: "autoscale", RunnerVersion: "latest"}

type host struct {
	f      *Fleet
	gh     *github
	p      engine.FleetPass // the pass under way: the test plays the engine, which holds it
	cancel context.CancelFunc
	done   chan struct{}
	wakes  atomic.Int64
}

// startHost joins a host to fleet "ci" on srv and runs it until the test ends or stop.
func startHost(t *testing.T, srv *etcdtest.Server, name, hostID string, gh *github, targets ...config.Target) *host {
	t.Helper()
	return startHostGov(t, srv, name, hostID, gh, nil, targets...)
}

// startHostGov is startHost with a request governor whose ceiling the fleet shares.
func startHostGov(t *testing.T, srv *etcdtest.Server, name, hostID string, gh *github, gov Governor, targets ...config.Target) *host {
	t.Helper()
	h := &host{gh: gh, done: make(chan struct{})}
	f, err := New(Options{
		Config: config.Fleet{EtcdEndpoints: []string{srv.Endpoint()}, Name: "ci", HostName: name, LeaseTTL: config.Duration(2 * time.Second)},
		HostID: hostID, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Wake: func(string) { h.wakes.Add(1) }, Governor: gov,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.f = f
	if len(targets) == 0 {
		targets = []config.Target{target}
	}
	f.SetTargets(&config.Config{Targets: targets})
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	if err := f.Start(ctx); err != nil {
		t.Fatalf("host %s: Start: %v", name, err)
	}
	go func() { defer close(h.done); _ = f.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

func (h *host) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	<-h.done
	_ = h.f.Close()
	h.cancel = nil
}

// The test plays the engine: it holds the pass Begin or BeginLight returned (h.p) and makes the
// rest of that pass's calls on it.
func (h *host) beginPass(ctx context.Context, tg config.Target, want bool) (bool, time.Duration) {
	p, list, age := h.f.Begin(ctx, tg, want)
	h.p = p
	return list, age
}

func (h *host) beginLight(tg config.Target) ([]engine.Job, bool) {
	p, jobs, shared := h.f.BeginLight(tg)
	h.p = p
	return jobs, shared
}

func (h *host) runners(ctx context.Context, tg config.Target) ([]engine.Runner, error) {
	return h.p.Runners(ctx, tg, h.gh)
}

func (h *host) queued(ctx context.Context, tg config.Target) ([]engine.Job, error) {
	return h.p.Queued(ctx, tg, h.gh)
}

func (h *host) share(ctx context.Context, tg config.Target, decide func(string, []engine.PeerSupply, int64) engine.PeerSupply) bool {
	return h.p.Share(ctx, tg, decide)
}

func (h *host) publish(ctx context.Context, tg config.Target, mine engine.PeerSupply) {
	h.p.Publish(ctx, tg, mine)
}

// shareTook shares the pass begun on target as a decide that says this host took took jobs, and
// returns the saw decide was told (-2 if it was not called).
func (h *host) shareTook(took int64) (saw int64) {
	saw = -2
	h.share(context.Background(), target, func(_ string, _ []engine.PeerSupply, s int64) engine.PeerSupply {
		saw = s
		return engine.PeerSupply{Took: took}
	})
	return saw
}

// begin starts a pass as the engine does: Begin, then the runner list if Begin says so (nil if not).
func (h *host) begin(t *testing.T, tg config.Target, want bool) []engine.Runner {
	t.Helper()
	ctx := context.Background()
	list, _ := h.beginPass(ctx, tg, want)
	if !list {
		return nil
	}
	rs, err := h.runners(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// pass does what one engine pass does with the fleet: read runners and jobs, then decide how many
// to start (greedily: whatever the fleet's supply leaves, up to free) and publish it. A refused
// Share starts nothing, as in the engine (loop.decide).
func (h *host) pass(t *testing.T, tg config.Target, mine engine.PeerSupply) (start int, ok bool) {
	t.Helper()
	return h.passListing(t, tg, mine, true)
}

// passListing is pass with the engine's own wish for a runner list (listNow) given as list.
func (h *host) passListing(t *testing.T, tg config.Target, mine engine.PeerSupply, list bool) (start int, ok bool) {
	t.Helper()
	ctx := context.Background()
	h.begin(t, tg, list)
	jobs, err := h.queued(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	ok = h.share(ctx, tg, func(_ string, peers []engine.PeerSupply, _ int64) engine.PeerSupply {
		need := len(jobs) - mine.Starting - mine.Idle
		for _, p := range peers {
			need -= p.Starting + p.Idle
		}
		start = max(min(need, mine.Free), 0)
		return engine.PeerSupply{Starting: mine.Starting + start, Idle: mine.Idle, Free: mine.Free - start}
	})
	if !ok {
		start = 0
	}
	return start, ok
}

func leaders(hs ...*host) (n int, who *host) {
	for _, h := range hs {
		if h.f.leads(target.Name) {
			n, who = n+1, h
		}
	}
	return n, who
}

// TestSecondLiveHostWithTheSameNameIsRefused: the membership is a leased key; a live holder keeps it.
func TestSecondLiveHostWithTheSameNameIsRefused(t *testing.T) {
	srv := etcdtest.Start(t)
	startHost(t, srv, "a", "id-a", &github{})
	f, err := New(Options{Config: config.Fleet{EtcdEndpoints: []string{srv.Endpoint()}, Name: "ci", HostName: "a", LeaseTTL: config.Duration(2 * time.Second)},
		HostID: "id-a", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Start(context.Background()); !errors.Is(err, ErrDuplicateHost) {
		t.Fatalf("Start with a live host of the same name: %v, want ErrDuplicateHost", err)
	}
	g, _ := New(Options{Config: config.Fleet{EtcdEndpoints: []string{srv.Endpoint()}, Name: "ci", HostName: "a", LeaseTTL: config.Duration(2 * time.Second)},
		HostID: "id-other", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer g.Close()
	if err := g.Start(context.Background()); !errors.Is(err, ErrHostIDMismatch) {
		t.Fatalf("Start with another journal's host id: %v, want ErrHostIDMismatch", err)
	}
}

// TestDifferentConfigServesAlone: a host whose target differs from the leader's reads GitHub itself,
// counts no peers and raises the alert, until its config agrees again.
func TestDifferentConfigServesAlone(t *testing.T) {
	srv := etcdtest.Start(t)
	a := startHost(t, srv, "a", "id-a", &github{})
	livetest.Eventually(t, "a leads", func() bool { return a.f.leads(target.Name) })
	changed := target
	changed.Labels = []string{"linux", "gpu"}
	var alone atomic.Bool
	b := startHost(t, srv, "b", "id-b", &github{}, changed)
	b.f.o.OnAlone = func(_ string, v bool) { alone.Store(v) }
	livetest.Eventually(t, "b to see a's fingerprint", func() bool { _, ok := b.f.ep.mir.get(b.f.keys.config(target.Name, "a")); return ok })
	b.gh.queue(1)
	if s, ok := b.pass(t, changed, engine.PeerSupply{Free: 4}); !ok || s != 1 || b.gh.reads.Load() != 2 || !alone.Load() {
		t.Fatalf("differing host: started %d (ok %v), GitHub reads %d, alert %v; want 1, its own 2 reads, alert raised", s, ok, b.gh.reads.Load(), alone.Load())
	}
	if jobs, shared := b.beginLight(changed); shared || jobs != nil {
		t.Fatalf("the differing host's light pass was handed %v (shared %v), want its own book (not shared)", jobs, shared)
	}
	b.f.SetTargets(&config.Config{Targets: []config.Target{target}})
	b.pass(t, target, engine.PeerSupply{})
	if alone.Load() {
		t.Fatal("the alert stayed up after the configs agreed")
	}
}

// twoHostsWithoutEtcd forms a fleet of two hosts, then stops etcd and waits until both left it.
func twoHostsWithoutEtcd(t *testing.T) (*etcdtest.Server, *host, *host) {
	t.Helper()
	srv := etcdtest.Start(t)
	a := startHost(t, srv, "a", "id-a", &github{})
	b := startHost(t, srv, "b", "id-b", &github{})
	livetest.Eventually(t, "one leader", func() bool { n, _ := leaders(a, b); return n == 1 })
	srv.Stop()
	livetest.Eventually(t, "both hosts to leave", func() bool { return !a.f.Status().Joined && !b.f.Status().Joined })
	return srv, a, b
}

// TestEtcdLostServesAloneAndRejoins: with etcd stopped a host decides alone (no peers) and says so;
// once etcd is back it rejoins by itself.
func TestEtcdLostServesAloneAndRejoins(t *testing.T) {
	srv, a, b := twoHostsWithoutEtcd(t)
	for _, h := range []*host{a, b} {
		h.gh.queue(2)
		if s, ok := h.pass(t, target, engine.PeerSupply{Free: 4}); !ok || s != 2 {
			t.Fatalf("host %s without etcd started %d (ok %v), want 2: alone, bounded by its own capacity", h.f.Host(), s, ok)
		}
		if r := h.f.Status().Reason; r == "" {
			t.Fatalf("host %s: no reason given for serving alone", h.f.Host())
		}
	}
	srv.Start()
	livetest.Eventually(t, "both hosts to rejoin", func() bool { return a.f.Status().Joined && b.f.Status().Joined })
	livetest.Eventually(t, "one leader again", func() bool { n, _ := leaders(a, b); return n == 1 })
}

// TestStopWithoutEtcdIsBounded: a host that lost etcd, and one still campaigning for a target it
// does not lead, stop within a few request timeouts while etcd stays away (the daemon's stop waits
// for Run), and Close ends what was left.
func TestStopWithoutEtcdIsBounded(t *testing.T) {
	_, a, b := twoHostsWithoutEtcd(t)
	for _, h := range []*host{a, b} {
		stopped := make(chan struct{})
		go func() { h.stop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(20 * time.Second): // a bound for a hang, not a timing: the stop waits at most a few 1 s requests
			t.Fatalf("host %s did not stop while etcd was down", h.f.Host())
		}
	}
}

// TestWakeLeadsWakesWhatThisHostLeads: the daemon joins before its loops run, so the wake of an
// early election is lost; WakeLeads, called once they run, wakes the targets this host leads.
func TestWakeLeadsWakesWhatThisHostLeads(t *testing.T) {
	srv := etcdtest.Start(t)
	a := startHost(t, srv, "a", "id-a", &github{})
	livetest.Eventually(t, "a leads", func() bool { return a.f.leads(target.Name) })
	before := a.wakes.Load()
	a.f.WakeLeads()
	if a.wakes.Load() != before+1 {
		t.Fatalf("WakeLeads woke %d times, want once for the target this host leads", a.wakes.Load()-before)
	}
}

// TestCallerDeadlineIsNotALostEtcd: a request cut by its caller's context (an engine pass that ran
// past its call timeout while the request governor paced its launches, then publishes) leaves the
// host joined in the same epoch, and a Share cut so decides nothing. Taken for a lost etcd, the
// host served its next pass alone: it launched for the whole demand with the whole GitHub ceiling.
func TestCallerDeadlineIsNotALostEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	a := startHost(t, srv, "a", "id-a", &github{})
	b := startHost(t, srv, "b", "id-b", &github{})
	livetest.Eventually(t, "one leader", func() bool { n, _ := leaders(a, b); return n == 1 })
	a.gh.queue(1)
	if _, ok := a.pass(t, target, engine.PeerSupply{Free: 4}); !ok {
		t.Fatal("the first pass was refused")
	}
	a.f.mu.Lock()
	ep := a.f.ep
	a.f.mu.Unlock()
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	a.publish(past, target, engine.PeerSupply{Idle: 3})
	a.f.Announce(past, target.Name)
	a.begin(t, target, true)
	if a.share(past, target, func(string, []engine.PeerSupply, int64) engine.PeerSupply { return engine.PeerSupply{Starting: 1} }) {
		t.Error("a Share whose caller's deadline had passed was taken as decided")
	}
	select {
	case <-ep.failed:
		t.Error("requests cut by their caller failed the host's epoch, as a lost etcd does")
	default:
	}
	if st := a.f.Status(); !st.Joined {
		t.Errorf("after requests cut by their caller: not joined (%q)", st.Reason)
	}
}
