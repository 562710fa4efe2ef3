// Package fleet lets several runner-manager hosts serve the same targets through etcd
// (go.etcd.io/etcd/client/v3 and its concurrency package). It owns what etcd holds for a fleet:
// host membership under a lease, each host's supply per target, launch decisions taken as etcd
// transactions, one elected reader of GitHub per target and the view of GitHub it publishes, and
// the fingerprints of the config each host serves a target with. It never decides how many runners
// a target needs (engine.plan does, inside Share) and never talks to GitHub itself: it decides who
// does. When etcd is unreachable the host serves alone, bounded by its own capacity, until it
// rejoins. docs/fleet.md describes the keys and the failure behaviour.
package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/runner-manager/runner-manager/config"
)

// Failures that stop a host from joining; the daemon refuses to start on them.
var (
	// ErrDuplicateHost: another live host holds this host_name's membership.
	ErrDuplicateHost = errors.New("another live host of the fleet has this host_name")
	// ErrHostIDMismatch: host_name is bound to another journal's host id.
	ErrHostIDMismatch = errors.New("host_name belongs to another host id")
)

// Options configure a Fleet.
type Options struct {
	Config config.Fleet
	// HostID is the journal's host id (the one in runner names); host_name is bound to it.
	HostID string
	Logger *slog.Logger
	// Wake asks this host's loop of target for a pass now: the leader published a new view,
	// another host received a webhook delivery for it, or this host just became its leader.
	Wake func(target string)
	// OnJoined reports membership changes (a metric): true once joined, false when etcd is lost.
	OnJoined func(joined bool)
	// OnAlone reports a target this host serves on its own because its config differs from the
	// fleet's (true), or no longer (false).
	OnAlone func(target string, alone bool)
	// OnLead reports that this host became the elected reader of target (true) or is no longer
	// (false: the target was removed, or the epoch ended, which OnJoined(false) reports too).
	OnLead func(target string, leads bool)
	// Governor, when set, shares the GitHub request governor's ceiling with the fleet's hosts
	// (budget.go); while not joined it has the whole ceiling, as a host without a fleet.
	Governor Governor
	// Sets is the scale-set demand source, whose queue news a scale-set target's leader publishes
	// in its view and its followers hear (scaleset.go); nil: the host has no scale-set targets.
	Sets SetSource
}

// Fleet is this host's membership of one fleet. Methods are safe for concurrent use.
type Fleet struct {
	o        Options
	log      *slog.Logger
	client   *clientv3.Client
	keys     keys
	host     string
	instance string // this process: tells its own stale membership from another host's
	ttl      time.Duration
	opTO     time.Duration

	mu      sync.Mutex
	ep      *epoch            // nil: not joined (serving alone)
	reason  string            // why not joined, for status
	targets map[string]string // target -> the fingerprint this host serves it with
	lists   map[string]list   // target -> the last runner list read as its leader (published in views)
	taken   map[string]string // target -> the leader's list a follower pass last took (newList)
	alone   map[string]bool
	lastPub map[string]string // target -> the supply value last written
	ownSaw  map[string]int64  // target -> this host's Took when it last read the jobs as leader (BeginLight)
	stray   []chan struct{}   // epochs whose goroutines outlived leave (etcd gone); Close waits
	wrote   int64             // revision of this host's last write, for the mirror to catch up to
	runCtx  context.Context
}

// New builds the client; nothing is contacted until Start.
func New(o Options) (*Fleet, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Wake == nil {
		o.Wake = func(string) {}
	}
	tlsCfg, err := tlsConfig(o.Config)
	if err != nil {
		return nil, err
	}
	ttl := o.Config.LeaseTTL.D()
	if ttl < 2*time.Second {
		ttl = 10 * time.Second
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints: o.Config.EtcdEndpoints, TLS: tlsCfg, Logger: zap.NewNop(),
		DialKeepAliveTime: ttl / 2, DialKeepAliveTimeout: ttl / 2,
	})
	if err != nil {
		return nil, fmt.Errorf("fleet %s: etcd client for %v: %w; check fleet.etcd_endpoints", o.Config.Name, o.Config.EtcdEndpoints, err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &Fleet{o: o, log: o.Logger.With("fleet", o.Config.Name), client: c, keys: newKeys(o.Config.Name),
		host: o.Config.HostName, instance: fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b)),
		ttl: ttl, opTO: min(ttl/2, 3*time.Second), targets: map[string]string{}, lists: map[string]list{}, taken: map[string]string{},
		alone: map[string]bool{}, lastPub: map[string]string{}, ownSaw: map[string]int64{}, reason: "not joined yet"}, nil
}

// Host is this host's name in the fleet.
func (f *Fleet) Host() string { return f.host }

// Close ends the client, which ends whatever an epoch left running while etcd did not answer; call
// it after Run returned.
func (f *Fleet) Close() error {
	err := f.client.Close()
	f.mu.Lock()
	stray := f.stray
	f.stray = nil
	f.mu.Unlock()
	for _, done := range stray {
		<-done
	}
	return err
}

func (f *Fleet) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.opTO)
}

// SetTargets records the targets this host serves (the enabled ones of a newly applied config)
// and the fingerprint of each; campaigns and published fingerprints follow at once when joined.
func (f *Fleet) SetTargets(cfg *config.Config) {
	want := map[string]string{}
	for _, t := range cfg.EnabledTargets() {
		want[t.Name] = Fingerprint(t)
	}
	f.mu.Lock()
	f.targets = want
	ep := f.ep
	f.mu.Unlock()
	if ep != nil {
		f.syncTargets(ep)
	}
}

// WakeLeads wakes every target this host leads. The daemon joins before its loops run, so the wake
// of an early election is lost, and a loop's first pass otherwise waits for its slot of the poll
// interval (ten minutes with webhooks): call it once the loops run, and the leader reads now.
func (f *Fleet) WakeLeads() {
	for _, n := range f.targetNames() {
		if f.leads(n) {
			f.o.Wake(n)
		}
	}
}

// targetNames are the targets this host serves.
func (f *Fleet) targetNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := make([]string, 0, len(f.targets))
	for n := range f.targets {
		names = append(names, n)
	}
	return names
}
