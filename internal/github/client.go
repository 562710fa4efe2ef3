// Package github is runner-manager's only way to talk to GitHub: demand (queued jobs), JIT runner
// registration, runner inventory and deletion, runner downloads, on go-github. It owns retries
// (go-retry exponential backoff with jitter for 5xx and connection errors), the rate-limit Budget
// (no request before a reset), conditional requests (ETag; a 304 costs no budget), and error
// classification (Error, RateLimitedError, UnauthorizedError, ErrRunnerBusy).
//
// It never decides how many runners to start, never touches the journal, and never puts a token,
// JWT, private key or JIT config into a log line or error string.
package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	gh "github.com/google/go-github/v62/github"
	"github.com/sethvargo/go-retry"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/github/auth"
	"github.com/runner-manager/runner-manager/internal/redact"
)

// Clock tells the time (injected so tests never wait for a real reset).
type Clock = auth.Clock

// Options configures New. Zero values are production defaults.
type Options struct {
	APIURL    string            // "" = https://api.github.com/
	Auth      auth.Source       // required
	Transport http.RoundTripper // the wire; default http.DefaultTransport
	Clock     Clock
	Sleep     auth.SleepFunc
	Logger    *slog.Logger
	// Observer is called after every request with its endpoint template, status and duration.
	Observer func(RequestInfo)
	// Contacted is called with the time of every successful answer (2xx or 304) from GitHub.
	Contacted func(time.Time)
	// TargetContacted is also called, with the target's name, for a call made under WithTarget.
	TargetContacted func(target string, at time.Time)
	// MaxRetries bounds retries of 5xx/connection errors (default 4); RetryBase is the first
	// backoff (default 1 s, doubling, ±20% jitter).
	MaxRetries uint64
	RetryBase  time.Duration
	// RequestTimeout bounds each attempt (default 30 s); an attempt that times out is retried
	// like a connection error.
	RequestTimeout time.Duration
	// MaxRateWait is the longest a call waits for a rate-limit reset before returning
	// *RateLimitedError instead (default 0: never wait, fail fast, let the engine reschedule).
	MaxRateWait time.Duration
	// Ledger, when set, journals what the request governor grants before it is spent and restores
	// it into each new governor, so a restart does not start at a full minute (ledger.go).
	Ledger Ledger
	// Installation lists repositories through GET /installation/repositories (App auth) instead of
	// GET /orgs/{org}/repos. Set by NewFromConfig for App credentials.
	Installation bool
	// Kind names the credential kind for permission remedies; set by NewFromConfig.
	Kind config.AuthKind
	// WebURL is the device-flow sign-in host used for renewals; "" derives it from api_url.
	WebURL string
	// Host is this machine's name as stored with a device-flow sign-in; "" = os.Hostname().
	Host string
	// Governor paces requests per GitHub account (governor.go); zero values are the defaults.
	Governor GovernorOptions
}

// Client is safe for concurrent use by many target loops.
type Client struct {
	gh     *gh.Client
	o      Options
	budget *Budget
	gov    *Governor
	// Wire is the metered transport below the credential; auth sources that call GitHub
	// themselves (App JWT requests) use it so those calls count against the same Budget.
	wire http.RoundTripper

	mu                sync.Mutex
	groups            map[string]int64 // "org/group name" -> runner group id
	repoCounts        map[string]int   // lower-case org -> repositories at its last listing (pollplan.go)
	repoCountsVersion int

	pace paceBook // adaptive polling (adaptive.go)
}

// New builds a client. Use NewFromConfig in the daemon and CLI.
func New(o Options) (*Client, error) {
	if o.Auth == nil {
		return nil, errors.New("github client: no credential configured")
	}
	c := newBare(o)
	if err := c.finish(o.Auth); err != nil {
		return nil, err
	}
	return c, nil
}

func newBare(o Options) *Client {
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	if o.Clock == nil {
		o.Clock = auth.SystemClock{}
	}
	if o.Sleep == nil {
		o.Sleep = auth.Sleep
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 4
	}
	if o.RetryBase == 0 {
		o.RetryBase = time.Second
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 30 * time.Second
	}
	b := NewBudget(o.Clock)
	c := &Client{o: o, budget: b, gov: NewGovernor(o.Governor, o.Clock, o.Sleep), groups: map[string]int64{}}
	if o.Ledger != nil {
		// A new governor starts owing what the last one spent in the minute before it (ledger.go).
		if grants, err := o.Ledger.Load(context.Background()); err == nil {
			c.gov.Restore(grants)
		} else {
			o.Logger.Warn("could not read the request governor's last minute from the journal; starting with a full minute", "err", err)
		}
		c.gov.SetLedger(o.Ledger)
	}
	c.wire = &governedTransport{c: c, next: &meter{next: o.Transport, budget: b, clock: o.Clock, observe: o.Observer, contacted: o.Contacted, targetContacted: o.TargetContacted}}
	return c
}

func (c *Client) finish(src auth.Source) error {
	c.o.Auth = src
	tr := &authorize{next: newETagCache(c.wire, etagCacheBytes), src: src}
	g := gh.NewClient(&http.Client{Transport: tr})
	if c.o.APIURL != "" {
		u, err := url.Parse(trimSlash(c.o.APIURL) + "/")
		if err != nil || u.Host == "" {
			return fmt.Errorf("github.api_url %q is not a URL", redact.URL(c.o.APIURL))
		}
		g.BaseURL = u
	}
	tr.host = g.BaseURL.Host
	c.gh = g
	return nil
}

// etagCacheBytes bounds the ETag cache's memory. An idle target's entries are small (an empty
// runs or runners list is under 1 KiB with its headers), so 64 MiB holds the working set of tens
// of thousands of targets.
const etagCacheBytes = 64 << 20

// NewFromConfig builds the client for the configured credential kind. stateDir holds the
// device-flow credential store.
func NewFromConfig(cfg config.GitHub, stateDir string, o Options) (*Client, error) {
	o.APIURL, o.Kind = cfg.APIURL, cfg.Auth()
	if cfg.PointsPerMinute > 0 {
		o.Governor.PointsPerMinute = cfg.PointsPerMinute
	}
	if cfg.MaxConcurrentRequests > 0 {
		o.Governor.Concurrent = cfg.MaxConcurrentRequests
	}
	c := newBare(o)
	var src auth.Source
	var err error
	switch cfg.Auth() {
	case config.AuthTokenFile:
		src, err = auth.NewTokenFile(cfg.TokenFile)
	case config.AuthApp:
		c.o.Installation = true
		src, err = auth.NewApp(auth.AppOptions{APIURL: apiURLOrDefault(cfg.APIURL), AppID: cfg.AppID, ClientID: cfg.AppClientID,
			InstallationID: cfg.InstallationID, PrivateKeyFile: cfg.PrivateKeyFile, Transport: c.wire})
	case config.AuthDeviceFlow:
		src, err = newUserSource(cfg, stateDir, c.o, c.wire)
	default:
		err = errors.New("no GitHub credential configured: set github.token_file, github.app_id (or app_client_id) + private_key_file, or github.device_flow")
	}
	if err != nil {
		return nil, err
	}
	if err := c.finish(src); err != nil {
		return nil, err
	}
	return c, nil
}

// newUserSource opens the device-flow sign-in of stateDir; renewals go through wire.
func newUserSource(cfg config.GitHub, stateDir string, o Options, wire http.RoundTripper) (*auth.User, error) {
	flow, err := deviceFlow(cfg, o.WebURL, wire, o.Clock)
	if err != nil {
		return nil, err
	}
	host := o.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	return auth.NewUser(auth.UserOptions{Store: auth.NewStore(stateDir), Flow: flow, Host: host, Clock: o.Clock, Logger: o.Logger})
}

func apiURLOrDefault(s string) string {
	if s == "" {
		return "https://api.github.com"
	}
	return trimSlash(s)
}

// Budget exposes the rate-limit tracker (remaining/limit/reset per resource).
func (c *Client) Budget() *Budget { return c.budget }

// Governor exposes the request governor (its settings and counters).
func (c *Client) Governor() *Governor { return c.gov }

// Credential describes the credential in use (never its value).
func (c *Client) Credential() string { return c.o.Auth.Describe() }

// op describes one kind of call for errors and metrics.
type op struct {
	endpoint string // "GET /repos/{owner}/{repo}/actions/runs"
	what     string // "list queued workflow runs"
	perm     perm
}

// maxRateWaits bounds how often one call waits out a rate limit before giving up.
const maxRateWaits = 3

// call runs fn under the retry policy: 5xx and connection errors back off exponentially with
// jitter (bounded), a rate limit waits for its reset only when within MaxRateWait, a 401 re-reads
// the credential once, and everything else is returned classified.
type sentTimeoutKey struct{}

// WithSentTimeout bounds ctx's calls to d from the moment their first attempt leaves the host:
// the wait for the request governor before it is not counted (it is the caller's own deadline's),
// so a call given up while waiting is still ErrNotSent. A registration uses it (the engine's
// RegistrationTimeout): GitHub answers it in seconds or not at all, and an attempt whose request
// never reached GitHub must be settled soon, not after the pass's general call timeout.
func WithSentTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, sentTimeoutKey{}, d)
}

func (c *Client) call(ctx context.Context, s Scope, o op, fn func(ctx context.Context) (*gh.Response, error)) error {
	ctx = withOwner(withEndpoint(ctx, o.endpoint), s.Owner)
	b := retry.WithMaxRetries(c.o.MaxRetries, retry.WithJitterPercent(20, retry.NewExponential(c.o.RetryBase)))
	reloaded, rateWaits, sent := false, 0, false
	for {
		// Admission comes before the attempt's timeout: waiting for the governor is not GitHub
		// failing to answer.
		gctx, release, err := c.admitCall(ctx, s, o)
		if err != nil && !sent {
			return fmt.Errorf("target %s: %s: %w: waiting for the request governor: %w", s, o.what, ErrNotSent, err)
		}
		if err != nil {
			return fmt.Errorf("target %s: %s: waiting for the request governor: %w", s, o.what, err)
		}
		if d, ok := ctx.Value(sentTimeoutKey{}).(time.Duration); ok && !sent {
			// From the first attempt on, the call (its retries and their waits) has d.
			var stop context.CancelFunc
			ctx, stop = context.WithTimeout(ctx, d)
			defer stop()
			gctx = context.WithValue(ctx, admittedKey{}, true)
		}
		sent = true
		actx, cancel := context.WithTimeout(gctx, c.o.RequestTimeout)
		resp, err := fn(actx)
		cancel()
		release()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("target %s: %s: %w", s, o.what, ctx.Err())
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = &Error{Target: s.String(), Op: o.what, Retryable: true,
				Detail: fmt.Sprintf("GitHub did not answer within %s", c.o.RequestTimeout)}
		}
		cerr := c.classify(s, o, resp, err)
		var rl *RateLimitedError
		var ue *UnauthorizedError
		switch {
		case errors.As(cerr, &rl):
			wait := rl.Until.Sub(c.o.Clock.Now())
			if wait > c.o.MaxRateWait || rateWaits >= maxRateWaits {
				return rl
			}
			rateWaits++
			c.o.Logger.Info("GitHub rate limit: waiting for the reset", "target", s.String(), "endpoint", o.endpoint, "until", rl.Until)
			if err := c.o.Sleep(ctx, wait); err != nil {
				return fmt.Errorf("target %s: %s: %w", s, o.what, err)
			}
		case errors.As(cerr, &ue) && !reloaded:
			reloaded = true
			changed, rerr := c.o.Auth.Reload(ctx, s.Owner)
			if !changed {
				if rerr != nil {
					ue.Err = rerr
				}
				return ue
			}
			c.o.Logger.Info("GitHub refused the credential; retrying with the re-read one", "target", s.String(), "credential", c.o.Auth.Describe())
		case IsRetryable(cerr):
			d, stop := b.Next()
			if stop {
				return cerr
			}
			c.o.Logger.Debug("GitHub call failed; retrying", "target", s.String(), "endpoint", o.endpoint, "in", d, "err", cerr)
			if err := c.o.Sleep(ctx, d); err != nil {
				return fmt.Errorf("target %s: %s: %w", s, o.what, err)
			}
		default:
			return cerr
		}
	}
}

// scoped is one REST call in the forms GitHub gives it for a repository, an organisation and an
// enterprise: go-github names each differently and takes the scope's parts as its arguments.
type scoped[T any] struct {
	repo func(ctx context.Context, owner, repo string) (T, *gh.Response, error)
	org  func(ctx context.Context, org string) (T, *gh.Response, error)
	ent  func(ctx context.Context, enterprise string) (T, *gh.Response, error)
}

// callScoped makes the form of f that fits s's kind, under c.call as operation o.
func callScoped[T any](ctx context.Context, c *Client, s Scope, o op, f scoped[T]) (T, error) {
	var out T
	err := c.call(ctx, s, o, func(ctx context.Context) (resp *gh.Response, err error) {
		switch {
		case s.IsEnterprise():
			out, resp, err = f.ent(ctx, s.Enterprise)
		case s.IsOrg():
			out, resp, err = f.org(ctx, s.Owner)
		default:
			out, resp, err = f.repo(ctx, s.Owner, s.Repo)
		}
		return resp, err
	})
	return out, err
}

// classify turns a go-github or transport error into one of the package's error types.
func (c *Client) classify(s Scope, o op, resp *gh.Response, err error) error {
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		cp := *rl
		cp.Target, cp.Op = s.String(), o.what
		return &cp
	}
	var ic interface{ Unauthorized() bool }
	var ce *credentialError
	if errors.As(err, &ce) {
		if errors.As(err, &ic) {
			return &UnauthorizedError{Target: s.String(), Op: o.what, Credential: c.o.Auth.Describe(), Err: ce.err}
		}
		// Only a network failure or GitHub's 5xx while getting a token is worth retrying; a
		// missing installation or an unreadable file is not.
		var ne net.Error
		var te *auth.TemporaryError
		retry := errors.As(ce.err, &ne) || errors.As(ce.err, &te)
		return &Error{Target: s.String(), Op: o.what, Retryable: retry, Detail: ce.Error(), Err: ce.err}
	}
	status := 0
	if resp != nil && resp.Response != nil {
		status = resp.StatusCode
	}
	var er *gh.ErrorResponse
	msg := ""
	if errors.As(err, &er) {
		msg = er.Message
		if er.Response != nil {
			status = er.Response.StatusCode
		}
	}
	switch {
	case status == http.StatusUnauthorized:
		return &UnauthorizedError{Target: s.String(), Op: o.what, Credential: c.o.Auth.Describe()}
	case status == http.StatusForbidden:
		return &Error{Target: s.String(), Op: o.what, Status: status, Detail: o.perm.remedy(c.o.Kind, s, msg)}
	case status == http.StatusNotFound:
		return &Error{Target: s.String(), Op: o.what, Status: status, Err: er,
			Detail: orDefault(msg, "Not Found") + " (" + s.String() + " does not exist, or " + c.o.Auth.Describe() + " cannot see it)"}
	case status >= 500:
		return &Error{Target: s.String(), Op: o.what, Status: status, Retryable: true, Detail: orDefault(msg, "GitHub is having trouble; retrying with backoff")}
	case status != 0:
		return &Error{Target: s.String(), Op: o.what, Status: status, Detail: orDefault(msg, http.StatusText(status)), Err: er}
	}
	var ne net.Error
	var ue *url.Error
	if errors.As(err, &ne) || errors.As(err, &ue) {
		return &Error{Target: s.String(), Op: o.what, Retryable: true, Err: unwrapURL(err)}
	}
	return &Error{Target: s.String(), Op: o.what, Detail: err.Error(), Err: err}
}

// unwrapURL drops url.Error's "Get <url>:" prefix; the cause is what the operator needs.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
