package github

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/runner-manager/runner-manager/internal/github/auth"
)

// GovernorOptions are the request governor's settings, the same for every account. Zero values are
// the defaults; they keep well inside GitHub's secondary limits (900 points a minute, 100 requests
// in flight, about one mutative request a second: docs/github.md).
type GovernorOptions struct {
	// PointsPerMinute is the ceiling of secondary-limit points (GET 1, POST/PATCH/PUT/DELETE 5)
	// spent in any minute; default 600.
	PointsPerMinute int
	// Concurrent caps REST requests in flight; default 8. The scale-set message queue's long
	// polls go to the Actions service through internal/scaleset, not through this governor.
	Concurrent int
	// Mutative requests pass through a bucket of MutativeBurst (default 10) refilled one per
	// MutativeEvery (default 1 s), as GitHub asks ("wait at least 1 second between mutative requests").
	MutativeBurst int
	MutativeEvery time.Duration
}

func (o GovernorOptions) withDefaults() GovernorOptions {
	if o.PointsPerMinute <= 0 {
		o.PointsPerMinute = 600
	}
	if o.Concurrent <= 0 {
		o.Concurrent = 8
	}
	if o.MutativeBurst <= 0 {
		o.MutativeBurst = 10
	}
	if o.MutativeEvery <= 0 {
		o.MutativeEvery = time.Second
	}
	return o
}

// pointsBurst is the points bucket's depth (pointsBurstOf the ceiling).
func (o GovernorOptions) pointsBurst() int { return pointsBurstOf(o.PointsPerMinute) }

// pointsRefill is what the points bucket refills a minute, the rate a lone governor sustains
// (pointsRefillOf the ceiling).
func (o GovernorOptions) pointsRefill() int {
	return pointsRefillOf(o.PointsPerMinute, o.pointsBurst())
}

// Governor paces every request runner-manager sends, one set of buckets per GitHub account (a
// token's user, an App installation): GitHub counts its secondary limits per account, not per
// host or per target, so the governor does too. It decides nothing about rate-limit answers
// (Budget does); it only keeps the daemon from earning them.
type Governor struct {
	o     GovernorOptions
	clock Clock
	sleep auth.SleepFunc

	mu       sync.Mutex
	accounts map[string]*governed
	fleet    *FleetShare   // nil: this host has the whole ceiling (no fleet, or not joined)
	wants    chan struct{} // signalled when an account starts waiting for points (Wants)

	ledgerMu sync.Mutex // one grant at a time, held across its journal write (ledger.go)
	ledger   Ledger
}

type governed struct {
	points   *rate.Limiter
	mutative *rate.Limiter
	slots    chan struct{}

	// under Governor.mu
	waits    int
	waited   time.Duration
	sent     minute    // points sent in the last minute, what a fleet host publishes
	lastWait time.Time // the last time a request waited for points
	share    int       // points a minute this host may spend now: the ceiling, or its fleet share
	grants   minute    // points granted ahead and journaled (ledger.go)
	grantAt  time.Time // the last grant
	advance  int       // its points not spent yet
}

// NewGovernor returns a governor on clock; sleep waits (injected so tests never wait).
func NewGovernor(o GovernorOptions, clock Clock, sleep auth.SleepFunc) *Governor {
	return &Governor{o: o.withDefaults(), clock: clock, sleep: sleep, accounts: map[string]*governed{}, wants: make(chan struct{}, 1)}
}

// Options returns the governor's settings with defaults applied.
func (g *Governor) Options() GovernorOptions { return g.o }

func (g *Governor) account(key string) *governed {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.accounts[key]
	if !ok {
		burst := g.o.pointsBurst()
		a = &governed{
			points:   rate.NewLimiter(rate.Limit(float64(g.o.pointsRefill())/60), burst),
			mutative: rate.NewLimiter(rate.Every(g.o.MutativeEvery), g.o.MutativeBurst),
			slots:    make(chan struct{}, g.o.Concurrent),
			share:    g.o.PointsPerMinute,
		}
		g.accounts[key] = a
		g.applyShareLocked(key, a, g.clock.Now())
	}
	return a
}

// points is GitHub's published cost of a request.
func points(method string) int {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return 1
	}
	return 5
}

func mutative(method string) bool { return points(method) > 1 }

type admittedKey struct{}

// admit waits until account may send one request of method: first its points (and, for a mutative
// request, the mutative bucket), then a concurrency slot. The returned release frees the slot. A
// context that ends while waiting returns its error and spends nothing.
func (g *Governor) admit(ctx context.Context, account, method string) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err // the caller gave up: nothing to send, nothing to spend
	}
	a := g.account(account)
	now := g.clock.Now()
	var wait time.Duration
	var held []*rate.Reservation
	if mutative(method) {
		r := a.mutative.ReserveN(now, 1)
		held = append(held, r)
		wait = r.DelayFrom(now)
	}
	r := a.points.ReserveN(now, points(method))
	held = append(held, r)
	wait = max(wait, r.DelayFrom(now))
	if wait > 0 {
		g.mu.Lock()
		a.waits++
		a.waited += wait
		started := a.lastWait.IsZero() || now.Sub(a.lastWait) >= time.Minute
		a.lastWait = now
		g.mu.Unlock()
		if started {
			select {
			case g.wants <- struct{}{}:
			default:
			}
		}
		if err := g.sleep(ctx, wait); err != nil {
			for _, r := range held {
				r.CancelAt(g.clock.Now())
			}
			return nil, err
		}
	}
	g.grant(ctx, a, points(method)) // journaled before it is sent
	g.mu.Lock()
	a.sent.add(g.clock.Now(), points(method))
	g.mu.Unlock()
	select {
	case a.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { <-a.slots }) }, nil
}

// GovernorStats is what status and metrics report about the governor.
type GovernorStats struct {
	PointsPerMinute int           // the ceiling
	Concurrent      int           // the cap
	InFlight        int           // requests holding a slot now, all accounts
	Waits           int           // requests that waited for points or the mutative bucket
	Waited          time.Duration // their total wait
	// FleetHosts is how many live hosts share the ceiling (this one included); 0 when this host
	// has it whole (no fleet, or not joined: degraded mode).
	FleetHosts int
	// Share is the points a minute this host may spend now: the ceiling when it has it whole, else
	// its fleet share (the smallest over accounts, with an App on several installations).
	Share int
}

// Stats sums the accounts' counters.
func (g *Governor) Stats() GovernorStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := GovernorStats{PointsPerMinute: g.o.PointsPerMinute, Concurrent: g.o.Concurrent, Share: g.o.PointsPerMinute}
	if g.fleet != nil {
		st.FleetHosts = g.fleet.Hosts
		st.Share = g.shareLocked(g.fleet.Others[""], Spend{})
	}
	first := true
	for _, a := range g.accounts {
		st.InFlight += len(a.slots)
		st.Waits += a.waits
		st.Waited += a.waited
		if first || a.share < st.Share {
			st.Share, first = a.share, false
		}
	}
	return st
}

// A fleet's hosts share one GitHub account's ceiling (docs/fleet.md): each publishes its Spend
// per account, and each governor paces itself at the share SetFleet gives it of what the others
// spent. GitHub counts the secondary limits per account, so N hosts each at the whole ceiling
// would earn them N times sooner.

// Spend is one account's use of the governor over the last minute, what a fleet host publishes.
type Spend struct {
	Points  int  `json:"points"`            // points sent in the last 60 s
	Waiting bool `json:"waiting,omitempty"` // a request waited for points in the last 60 s: it wants more
}

// FleetShare is what the fleet's other live hosts published, for SetFleet.
type FleetShare struct {
	Hosts  int                // live hosts sharing the ceiling, this one included
	Others map[string][]Spend // account -> the other hosts' spend (a host that published none: absent)
}

// Spend reports each account's points over the last minute and whether it had to wait.
func (g *Governor) Spend() map[string]Spend {
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]Spend, len(g.accounts))
	for k, a := range g.accounts {
		out[k] = a.spendLocked(now)
	}
	return out
}

func (a *governed) spendLocked(now time.Time) Spend {
	return Spend{Points: a.sent.sum(now), Waiting: !a.lastWait.IsZero() && now.Sub(a.lastWait) < time.Minute}
}

// Wants is signalled when an account that had not waited for a minute waits for points: a fleet
// host publishes its spend at once then, so the others stop counting on the pool it now wants.
func (g *Governor) Wants() <-chan struct{} { return g.wants }

// SetFleet sets what the fleet's other hosts spend; nil gives this host the whole ceiling again
// (no fleet, or etcd unreachable: degraded mode, where each host is on its own). The shares follow
// at once, and each account created later starts at its share.
func (g *Governor) SetFleet(fs *FleetShare) {
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if fs != nil && fs.Hosts < 1 {
		fs = nil
	}
	g.fleet = fs
	for k, a := range g.accounts {
		g.applyShareLocked(k, a, now)
	}
}

// applyShareLocked paces account a at its share: the bucket refills at the share less its depth
// and margin (pointsRefillOf), so any minute holds less than the share, as the lone governor holds
// less than the ceiling. In a fleet the depth is that of an even part of the ceiling whatever the
// share: a full bucket is what a host can send before the others hear of it.
func (g *Governor) applyShareLocked(key string, a *governed, now time.Time) {
	share, burst := g.o.PointsPerMinute, g.o.pointsBurst()
	if g.fleet != nil {
		share = g.shareLocked(g.fleet.Others[key], a.spendLocked(now))
		burst = pointsBurstOf(g.o.PointsPerMinute / g.fleet.Hosts)
	}
	if share == a.share && a.points.Burst() == burst {
		return
	}
	a.share = share
	a.points.SetBurstAt(now, burst)
	a.points.SetLimitAt(now, rate.Limit(float64(pointsRefillOf(share, burst))/60))
}

func (g *Governor) shareLocked(others []Spend, own Spend) int {
	return fleetShare(g.o.PointsPerMinute, g.fleet.Hosts, own, others)
}

// ShareOf is the points a minute a host that spent own of account may spend out of ceiling; a nil
// share (not joined) leaves it the whole ceiling.
func (fs *FleetShare) ShareOf(ceiling int, account string, own Spend) int {
	ceiling = GovernorOptions{PointsPerMinute: ceiling}.withDefaults().PointsPerMinute
	if fs == nil || fs.Hosts < 1 {
		return ceiling
	}
	return fleetShare(ceiling, fs.Hosts, own, fs.Others[account])
}

// fleetShare is one host's points a minute out of a ceiling that hosts share, given what it and
// the others spent over the last minute. Each host keeps a floor of ceiling/(4 x hosts) that is
// always its own, so a host that starts needing GitHub is never starved by a busy one and never
// pushes the fleet over the ceiling either (the busy one's last minute is already spent: a floor
// taken from it would add to it). The rest of the ceiling, the pool, is shared by need. A host may
// spend its floor, what it spent above its floor in the last minute (up to its fair part: the pool
// less what the satisfied hosts use, split among the hosts that had to wait, which want more), and
// its part of what the pool left unspent. So a lone busy host grows to floor + pool within a
// minute; a busy host that others join falls to its fair part, and what it stops spending goes to
// them as it leaves its last minute; and an overspent pool (a publication came late) shrinks every
// share until it fits. The shares of hosts that see the same publications add up to the ceiling.
func fleetShare(ceiling, hosts int, own Spend, others []Spend) int {
	if hosts <= 1 {
		return ceiling
	}
	floor := ceiling / (4 * hosts)
	pool := ceiling - hosts*floor
	above := func(s Spend) int { return max(s.Points-floor, 0) }
	used, wanting, rest := above(own), 1, pool
	for _, o := range others {
		used += above(o)
		if o.Waiting {
			wanting++
		} else {
			rest -= above(o)
		}
	}
	fair := max(rest, 0) / wanting
	share := floor + min(above(own), fair) + (pool-used)/wanting
	return min(max(share, floor), ceiling)
}

// pointsBurstOf is the depth of the points bucket for perMinute (a ceiling, or an even part of it
// in a fleet): a twentieth of it, at least 10 so a 5-point request always fits.
func pointsBurstOf(perMinute int) int { return max(10, perMinute/20) }

// pointsRefillOf is what a bucket of depth burst pacing perMinute refills a minute: perMinute less
// the depth and a margin of a twentieth of perMinute (at least 1). Any 60 s then admits at most
// burst + refill = perMinute - margin points, so a full bucket cannot double a minute, and the
// margin keeps GitHub's count under perMinute too: GitHub's sliding minute counts requests when
// they arrive, not when the governor admitted them (a wait for a concurrency slot, a slow
// connection, clock steps), and the margin absorbs about 3 s of such drift
// (TestGovernorPointsNeverExceedCeiling; benchmarks.md figure 12: 600 at 600 before the margin).
func pointsRefillOf(perMinute, burst int) int {
	return max(1, perMinute-burst-pointsMarginOf(perMinute))
}

// pointsMarginOf is the part of perMinute a bucket pacing it leaves unspent in any 60 s.
func pointsMarginOf(perMinute int) int { return max(1, perMinute/20) }

// minute counts points per second over the last minute, on the governor's clock.
type minute struct {
	sec [60]int64
	pts [60]int
}

func (m *minute) add(now time.Time, p int) {
	s := now.Unix()
	i := ((s % 60) + 60) % 60
	if m.sec[i] != s {
		m.sec[i], m.pts[i] = s, 0
	}
	m.pts[i] += p
}

func (m *minute) sum(now time.Time) int {
	s, total := now.Unix(), 0
	for i := range m.sec {
		if m.sec[i] <= s && s-m.sec[i] < 60 {
			total += m.pts[i]
		}
	}
	return total
}

// accountOf names the GitHub account a request is charged to. A token or a signed-in user is one
// account; an App has one per installation (the owner it acts for), and its own for the JWT calls.
func (c *Client) accountOf(owner string, jwt bool) string {
	switch {
	case jwt:
		return "app"
	case c.o.Installation:
		return strings.ToLower(owner)
	}
	return ""
}

// admitCall admits one attempt of a call(): o.endpoint starts with the method.
func (c *Client) admitCall(ctx context.Context, s Scope, o op) (context.Context, func(), error) {
	method, _, _ := strings.Cut(o.endpoint, " ")
	release, err := c.gov.admit(ctx, c.accountOf(s.Owner, false), method)
	if err != nil {
		return nil, nil, err
	}
	return context.WithValue(ctx, admittedKey{}, true), release, nil
}

// governedTransport is the transport step that admits each request through the governor, unless call()
// already did (it admits before the per-attempt timeout starts, so a wait for points is never
// mistaken for a GitHub that does not answer).
type governedTransport struct {
	next http.RoundTripper
	c    *Client
}

func (t *governedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if v, _ := req.Context().Value(admittedKey{}).(bool); v {
		return t.next.RoundTrip(req)
	}
	owner, _ := req.Context().Value(ownerKey).(string)
	jwt := strings.Count(req.Header.Get("Authorization"), ".") == 2
	release, err := t.c.gov.admit(req.Context(), t.c.accountOf(owner, jwt), req.Method)
	if err != nil {
		closeBody(req)
		return nil, fmt.Errorf("waiting for the request governor: %w", err)
	}
	defer release()
	return t.next.RoundTrip(req)
}
