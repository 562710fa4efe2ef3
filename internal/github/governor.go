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
	// Concurrent caps REST requests in flight; default 8. Long polls (WithLongPoll) do not count.
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

// pointsBurst is the points bucket's depth. The bucket refills at (ceiling - burst) a minute, so any
// 60 s holds at most burst + (ceiling - burst) = ceiling points: a full bucket cannot double a
// minute. At least 10, so a 5-point request always fits.
func (o GovernorOptions) pointsBurst() int { return max(10, o.PointsPerMinute/10) }

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
}

type governed struct {
	points   *rate.Limiter
	mutative *rate.Limiter
	slots    chan struct{}

	// under Governor.mu
	waits  int
	waited time.Duration
}

// NewGovernor returns a governor on clock; sleep waits (injected so tests never wait).
func NewGovernor(o GovernorOptions, clock Clock, sleep auth.SleepFunc) *Governor {
	return &Governor{o: o.withDefaults(), clock: clock, sleep: sleep, accounts: map[string]*governed{}}
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
			points:   rate.NewLimiter(rate.Limit(float64(g.o.PointsPerMinute-burst)/60), burst),
			mutative: rate.NewLimiter(rate.Every(g.o.MutativeEvery), g.o.MutativeBurst),
			slots:    make(chan struct{}, g.o.Concurrent),
		}
		g.accounts[key] = a
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

type longPollKey struct{}

// WithLongPoll marks ctx's requests as long polls (the scale-set message queue): they hold a
// connection open for up to a minute, so they are not counted against the concurrency cap. Their
// points are still paced.
func WithLongPoll(ctx context.Context) context.Context {
	return context.WithValue(ctx, longPollKey{}, true)
}

type admittedKey struct{}

// admit waits until account may send one request of method: first its points (and, for a mutative
// request, the mutative bucket), then a concurrency slot. The returned release frees the slot. A
// context that ends while waiting returns its error and spends nothing.
func (g *Governor) admit(ctx context.Context, account, method string) (release func(), err error) {
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
		g.mu.Unlock()
		if err := g.sleep(ctx, wait); err != nil {
			for _, r := range held {
				r.CancelAt(g.clock.Now())
			}
			return nil, err
		}
	}
	if v, _ := ctx.Value(longPollKey{}).(bool); v {
		return func() {}, nil
	}
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
}

// Stats sums the accounts' counters.
func (g *Governor) Stats() GovernorStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := GovernorStats{PointsPerMinute: g.o.PointsPerMinute, Concurrent: g.o.Concurrent}
	for _, a := range g.accounts {
		st.InFlight += len(a.slots)
		st.Waits += a.waits
		st.Waited += a.waited
	}
	return st
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
