package daemon

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/github"
	"github.com/runner-manager/runner-manager/internal/metrics"
	"github.com/runner-manager/runner-manager/internal/status"
)

// gitHub adapts *github.Client to the engine's Demand and Registrar. The client is built on first
// use, not at start, so a host with no enabled target needs no credential and makes no call; it is
// rebuilt when a reload changes the [github] section.
type gitHub struct {
	build     func(account string, gc config.GitHub) (*github.Client, error)
	name      string                  // the account's name (config.DefaultAccount for [github])
	idleEvery func(config.Target) int // passes between an idle repository's reads; nil: the client's default

	mu     sync.Mutex
	cfg    config.GitHub
	client *github.Client
	share  *github.FleetShare // the fleet's last word on the governor's share (nil: the whole ceiling)
	others map[string]*gitHub // the [[account]]s by name, each with its own client and governor (accounts.go)
}

func newGitHub(cfg *config.Config, build func(account string, gc config.GitHub) (*github.Client, error)) *gitHub {
	g := &gitHub{build: build, name: config.DefaultAccount, cfg: cfg.GitHub}
	g.setAccounts(cfg.Accounts)
	return g
}

// setConfig records the [github] section and the [[account]]s of a newly applied config; a change
// of an account drops its client so the next call builds one with the new credential.
func (g *gitHub) setConfig(cfg *config.Config) {
	g.setSection(cfg.GitHub)
	g.setAccounts(cfg.Accounts)
}

// setSection records one account's section; a change drops its client.
func (g *gitHub) setSection(cfg config.GitHub) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if reflect.DeepEqual(cfg, g.cfg) {
		return
	}
	g.cfg, g.client = cfg, nil
}

func (g *gitHub) get() (*github.Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.client != nil {
		return g.client, nil
	}
	c, err := g.build(g.name, g.cfg)
	if err != nil {
		return nil, &unauthorizedError{err: err}
	}
	c.Governor().SetFleet(g.share) // a rebuilt client's governor keeps the fleet's share
	g.client = c
	return c, nil
}

// gitHub is the fleet's fleet.Governor: the governor of the client in use, whichever that is.

func (g *gitHub) current() *github.Client {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.client
}

func (g *gitHub) Spend() map[string]github.Spend {
	var out map[string]github.Spend
	if c := g.current(); c != nil {
		out = c.Governor().Spend()
	}
	return g.othersSpend(out)
}

// usedByAccount is the points each account's governor sent over the last minute (metrics).
func (g *gitHub) usedByAccount() map[string]int { return g.perAccount((*gitHub).usedOne) }

// usedOne is the points this account's governor alone sent over the last minute.
func (g *gitHub) usedOne() int {
	used := 0
	if c := g.current(); c != nil {
		for _, s := range c.Governor().Spend() {
			used += s.Points
		}
	}
	return used
}

// usedPerMinute is the points sent over the last minute, every account summed (status).
func (g *gitHub) usedPerMinute() int {
	used := 0
	for _, n := range g.usedByAccount() {
		used += n
	}
	return used
}

func (g *gitHub) SetFleet(fs *github.FleetShare) {
	g.mu.Lock()
	g.share = fs
	c := g.client
	others := g.othersLocked()
	g.mu.Unlock()
	if c != nil {
		c.Governor().SetFleet(fs)
	}
	for name, a := range others {
		a.SetFleet(accountShare(fs, name))
	}
}

func (g *gitHub) Wants() <-chan struct{} {
	if c := g.current(); c != nil {
		return c.Governor().Wants()
	}
	return nil
}

// pollingFleet is status's word on how this host shares the ceiling with its fleet.
func (g *gitHub) pollingFleet(ceiling int) *status.PollingFleet {
	c := g.current()
	if c == nil {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.share == nil {
			return &status.PollingFleet{SharePerMinute: ceiling}
		}
		return &status.PollingFleet{Hosts: g.share.Hosts, SharePerMinute: g.share.ShareOf(ceiling, "", github.Spend{})}
	}
	st := c.Governor().Stats()
	return &status.PollingFleet{Hosts: st.FleetHosts, SharePerMinute: st.Share}
}

// sharePerMinute is the metrics' governor-share source: the points a minute this host may spend
// now, per account, read at scrape time. Like rateLimits it never builds a client: before the first one, the
// share is what the fleet's last word gives the configured ceiling (the whole of it when alone).
func (g *gitHub) sharePerMinute() map[string]int { return g.perAccount((*gitHub).shareOne) }

// shareOne is sharePerMinute of this account alone.
func (g *gitHub) shareOne() int {
	if c := g.current(); c != nil {
		return c.Governor().Stats().Share
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.share.ShareOf(g.cfg.PointsPerMinute, "", github.Spend{})
}

// rateLimits is the metrics' rate-limit source: each account's budget of the client in use, by
// account name, read at scrape time. It never builds a client, so a scrape loads no credential and
// calls nothing; an account without a client yet has no series.
func (g *gitHub) rateLimits() map[string]map[string]metrics.RateLimit {
	out := map[string]map[string]metrics.RateLimit{}
	g.mu.Lock()
	others := g.othersLocked()
	g.mu.Unlock()
	for name, a := range others {
		if r := a.rateLimitsOne(); r != nil {
			out[name] = r
		}
	}
	if r := g.rateLimitsOne(); r != nil {
		out[g.name] = r
	}
	return out
}

// rateLimitsOne is rateLimits of this account alone; nil before its client is built.
func (g *gitHub) rateLimitsOne() map[string]metrics.RateLimit {
	c := g.current()
	if c == nil {
		return nil
	}
	rates := c.Budget().Rates()
	out := make(map[string]metrics.RateLimit, len(rates))
	for res, r := range rates {
		out[res] = metrics.RateLimit{Limit: r.Limit, Remaining: r.Remaining, Reset: r.Reset}
	}
	return out
}

func (g *gitHub) Queued(ctx context.Context, t config.Target) ([]engine.Job, error) {
	if t.Enterprise != "" {
		return nil, errWebhookOnly // its deliveries are its demand (config.Validate)
	}
	ctx, c, s, err := g.scoped(ctx, t)
	if err != nil {
		return nil, err
	}
	if g.idleEvery != nil {
		ctx = github.WithIdleEvery(ctx, g.idleEvery(t))
	}
	jobs, err := c.Jobs(ctx, s, t.Labels)
	var partial *github.PartialError
	if err != nil && !errors.As(err, &partial) {
		return nil, classify(err)
	}
	out := make([]engine.Job, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, engine.Job{ID: j.ID, Name: j.Name, Labels: j.Labels, QueuedAt: j.CreatedAt, Runner: j.RunnerName})
	}
	return out, err // a *github.PartialError: the jobs are valid (engine: Partial)
}

func (g *gitHub) JITConfig(ctx context.Context, t config.Target, req engine.JITRequest) (engine.Registration, error) {
	ctx, c, s, err := g.scoped(ctx, t)
	if err != nil {
		return engine.Registration{}, err
	}
	var group int64
	if req.RunnerGroup != "" {
		if group, err = c.RunnerGroupID(ctx, s, req.RunnerGroup); err != nil {
			return engine.Registration{}, classify(err)
		}
	}
	// Its own short bound once sent, so the engine's settling of a registration that never
	// reached GitHub can count on it (engine.RegistrationTimeout).
	jctx := github.WithSentTimeout(ctx, engine.RegistrationTimeout)
	jit, err := c.GenerateJITConfig(jctx, s, req.Name, withSelfHosted(req.Labels), group, req.WorkDir)
	if err != nil {
		return engine.Registration{}, jitError(err)
	}
	return engine.Registration{RunnerID: jit.RunnerID, JITConfig: jit.Encoded}, nil
}

func (g *gitHub) Runners(ctx context.Context, t config.Target) ([]engine.Runner, error) {
	ctx, c, s, err := g.scoped(ctx, t)
	if err != nil {
		return nil, err
	}
	rs, err := c.ListRunners(ctx, s)
	if err != nil {
		return nil, classify(err)
	}
	out := make([]engine.Runner, 0, len(rs))
	for _, r := range rs {
		out = append(out, engine.Runner{ID: r.ID, Name: r.Name, Busy: r.Busy, Online: r.Status == "online"})
	}
	return out, nil
}

func (g *gitHub) DeleteRunner(ctx context.Context, t config.Target, runnerID int64) error {
	ctx, c, s, err := g.scoped(ctx, t)
	if err != nil {
		return err
	}
	err = c.DeleteRunner(ctx, s, runnerID)
	if errors.Is(err, github.ErrRunnerBusy) {
		return classed(engine.ErrRunnerBusy, err)
	}
	return classify(err)
}

// scoped returns the client of t's account and t's scope, and ctx marked for t so the target's
// last GitHub contact is its own (metrics).
func (g *gitHub) scoped(ctx context.Context, t config.Target) (context.Context, *github.Client, github.Scope, error) {
	s, err := github.ScopeOf(t)
	if err != nil {
		return ctx, nil, github.Scope{}, &terminalError{err: err}
	}
	a, err := g.forTarget(t)
	if err != nil {
		return ctx, nil, s, err
	}
	c, err := a.get()
	return github.WithTarget(ctx, t.Name), c, s, err
}

// withSelfHosted adds the label every self-hosted runner carries; jobs may name it in runs-on.
func withSelfHosted(labels []string) []string {
	for _, l := range labels {
		if l == "self-hosted" {
			return labels
		}
	}
	return append([]string{"self-hosted"}, labels...)
}

// jitError marks a registration never sent (cut in the request governor) as engine.ErrNotSent,
// and a 409 on a registration as engine.ErrRunnerNameTaken: names are unique per attempt,
// so the name exists only because an earlier try of the same POST (timed out, or answered 5xx and
// retried) reached GitHub. The engine finds that registration by name instead of backing off.
func jitError(err error) error {
	if errors.Is(err, github.ErrNotSent) {
		return classed(engine.ErrNotSent, err)
	}
	var e *github.Error
	if errors.As(err, &e) && e.Status == http.StatusConflict {
		return classed(engine.ErrRunnerNameTaken, err)
	}
	return classify(err)
}

// classify gives internal/github's errors the method the engine classifies by. Rate-limited and
// unauthorized errors already have theirs (RetryAfter, Unauthorized); terminal ones get Terminal.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var rl interface{ RetryAfter() time.Time }
	var ua interface{ Unauthorized() bool }
	if errors.As(err, &rl) || errors.As(err, &ua) {
		return err
	}
	if github.IsTerminal(err) {
		return &terminalError{err: err}
	}
	return err
}

type terminalError struct{ err error }

func (e *terminalError) Error() string  { return e.err.Error() }
func (e *terminalError) Unwrap() error  { return e.err }
func (e *terminalError) Terminal() bool { return true }

// unauthorizedError marks a credential that could not even be loaded (missing token file, no
// device-flow sign-in yet): the target backs off as for a 401 until the operator fixes it.
type unauthorizedError struct{ err error }

func (e *unauthorizedError) Error() string      { return e.err.Error() }
func (e *unauthorizedError) Unwrap() error      { return e.err }
func (e *unauthorizedError) Unauthorized() bool { return true }

// apiURL is the [github] api_url in force.
func (g *gitHub) apiURL() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cfg.APIURL
}
