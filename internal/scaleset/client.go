// Package scaleset is runner-manager's client of GitHub's Actions service for runner scale sets:
// the token chain (registration token -> runner-registration -> admin JWT, renewed before it
// expires), scale sets, sessions, the long-poll message queue, job acquisition, scale-set JIT
// configs and runner removal; and Holder, the unit that owns one scale set's message session and
// journals it so a crash never locks the host out.
//
// It never holds the GitHub credential: registration tokens come from a RegistrationTokens (the
// REST client, internal/github). Actions-service tokens go only to the hosts the service itself
// named (runner-registration's URL and each session's messageQueueUrl). It never decides how many
// runners to start, and never puts a token or JIT config into an error or log line.
package scaleset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v4"
	gh "github.com/google/go-github/v62/github"
	"github.com/sethvargo/go-retry"

	"github.com/runner-manager/runner-manager/internal/github/auth"
)

// RegistrationTokens mints runner registration tokens over the REST API for scope ("org" or
// "owner/repo"); internal/github implements it with the GitHub credential.
type RegistrationTokens interface {
	RegistrationToken(ctx context.Context, scope string) (string, error)
}

// Options configure a Client for one scope. Zero values are production defaults.
type Options struct {
	APIURL    string // REST base URL; "" = https://api.github.com
	WebURL    string // the web host the config URL names; "" = https://github.com
	Scope     string // "org" or "owner/repo"
	Tokens    RegistrationTokens
	Transport http.RoundTripper // default http.DefaultTransport; never carries the GitHub credential
	Now       func() time.Time
	Sleep     func(ctx context.Context, d time.Duration) error
	// PollTimeout bounds one message GET; it must outlast the service's long poll (~50 s). Default 5 min.
	PollTimeout time.Duration
	// CallTimeout bounds every other call; default 30 s.
	CallTimeout time.Duration
	UserAgent   string
}

// Client talks to the Actions service for one scope. Safe for concurrent use.
type Client struct {
	o    Options
	http *http.Client
	reg  *gh.Client // runner-registration on the REST host, without the GitHub credential

	mu      sync.Mutex
	admin   string
	expires time.Time
	base    *url.URL
	hosts   map[string]bool // hosts the service named: the only ones that get its tokens
}

// tokenMargin renews the admin token this long before its exp (scaleset.md section 1, step 4).
const tokenMargin = 60 * time.Second

// New builds a client; it makes no call until the first operation.
func New(o Options) (*Client, error) {
	if o.Tokens == nil || o.Scope == "" {
		return nil, errors.New("scale-set client: no scope or registration-token source (a bug in the caller)")
	}
	if o.APIURL == "" {
		o.APIURL = "https://api.github.com"
	}
	if o.WebURL == "" {
		o.WebURL = "https://github.com"
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = auth.Sleep
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 5 * time.Minute
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.UserAgent == "" {
		o.UserAgent = "runner-manager (scaleset)"
	}
	api, err := url.Parse(strings.TrimRight(o.APIURL, "/") + "/")
	if err != nil || api.Host == "" {
		return nil, fmt.Errorf("github.api_url %q is not a URL", o.APIURL)
	}
	c := &Client{o: o, http: &http.Client{Transport: o.Transport}, hosts: map[string]bool{}}
	c.reg = gh.NewClient(&http.Client{Transport: o.Transport})
	c.reg.BaseURL = api
	return c, nil
}

// ConfigURL is the URL runner-registration is asked about: the web URL of the scope.
func (c *Client) ConfigURL() string { return strings.TrimRight(c.o.WebURL, "/") + "/" + c.o.Scope }

// adminToken returns a valid admin token and the service base URL, rerunning the chain when the
// token is missing or expires within a minute. There is no refresh endpoint.
func (c *Client) adminToken(ctx context.Context) (string, *url.URL, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.admin != "" && c.o.Now().Add(tokenMargin).Before(c.expires) {
		return c.admin, c.base, nil
	}
	reg, err := c.o.Tokens.RegistrationToken(ctx, c.o.Scope)
	if err != nil {
		return "", nil, fmt.Errorf("get a registration token for %s: %w", c.o.Scope, err)
	}
	var out struct {
		URL   string `json:"url"`
		Token string `json:"token"`
	}
	b := retry.WithMaxRetries(4, retry.WithJitterPercent(20, retry.NewExponential(500*time.Millisecond)))
	for {
		req, err := c.reg.NewRequest(http.MethodPost, "actions/runner-registration",
			map[string]string{"url": c.ConfigURL(), "runner_event": "register"})
		if err != nil {
			return "", nil, err
		}
		req.Header.Set("Authorization", "RemoteAuth "+reg)
		cctx, cancel := context.WithTimeout(ctx, c.o.CallTimeout)
		resp, err := c.reg.Do(cctx, req, &out)
		cancel()
		if err == nil {
			break
		}
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		// 401 and 403 are retried briefly (scaleset.md section 1, step 3), as are 5xx and the network.
		d, stop := b.Next()
		if stop || (status != 0 && status != 401 && status != 403 && status < 500) {
			return "", nil, &Error{Op: "runner-registration for " + c.ConfigURL(), Status: status, Message: ghMessage(err)}
		}
		if err := c.o.Sleep(ctx, d); err != nil {
			return "", nil, err
		}
	}
	if out.URL == "" || out.Token == "" {
		return "", nil, &Error{Op: "runner-registration for " + c.ConfigURL(), Message: "the answer has no service URL or token; try again"}
	}
	base, err := url.Parse(out.URL)
	if err != nil || base.Host == "" {
		return "", nil, &Error{Op: "runner-registration", Message: "the service URL is not a URL"}
	}
	var claims jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(out.Token, &claims); err != nil || claims.ExpiresAt == nil {
		return "", nil, &Error{Op: "runner-registration", Message: "the admin token is not a JWT with an expiry"}
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	c.admin, c.expires, c.base = out.Token, claims.ExpiresAt.Time, base
	c.hosts[base.Host] = true
	return c.admin, c.base, nil
}

func ghMessage(err error) string {
	var er *gh.ErrorResponse
	if errors.As(err, &er) {
		return er.Message
	}
	return err.Error()
}

// allowHost adds a host the service named (a session's message queue).
func (c *Client) allowHost(u string) error {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return &Error{Op: "open a session", Message: "the service returned no usable messageQueueUrl; try again"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hosts[p.Host] = true
	return nil
}

// send performs one request with token to u, checking that u's host is one the service named,
// retrying transport errors, 429 and 5xx other than 501 (scaleset.md section 2b, "HTTP"). It
// returns the status and the body with any BOM stripped.
func (c *Client) send(ctx context.Context, op, method string, u *url.URL, token string, body any, hdr http.Header, timeout time.Duration) (int, []byte, error) {
	c.mu.Lock()
	ok := c.hosts[u.Host]
	c.mu.Unlock()
	if !ok {
		return 0, nil, &Error{Op: op, Message: "refusing to send an Actions-service token to " + u.Host + ", a host the service did not name"}
	}
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return 0, nil, err
		}
	}
	b := retry.WithMaxRetries(4, retry.WithCappedDuration(30*time.Second, retry.WithJitterPercent(20, retry.NewExponential(time.Second))))
	for {
		status, data, err := c.once(ctx, method, u, token, raw, hdr, timeout)
		transient := err != nil || status == http.StatusTooManyRequests || (status >= 500 && status != http.StatusNotImplemented)
		if !transient || ctx.Err() != nil {
			return status, data, err
		}
		d, stop := b.Next()
		if stop {
			if err == nil {
				err = &Error{Op: op, Status: status, Message: errorMessage(data), Retryable: true}
			}
			return status, data, err
		}
		if serr := c.o.Sleep(ctx, d); serr != nil {
			return 0, nil, serr
		}
	}
}

func (c *Client) once(ctx context.Context, method string, u *url.URL, token string, raw []byte, hdr http.Header, timeout time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if raw != nil {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("User-Agent", c.o.UserAgent)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may carry a session id; the cause is what matters
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, bytes.TrimPrefix(data, []byte("\ufeff")), nil
}

// adminCall runs an admin-token call on path (relative to the service URL, which keeps its
// prefix), adding api-version, and decodes a 2xx answer into out.
func (c *Client) adminCall(ctx context.Context, op, method, path string, query url.Values, body, out any) (int, error) {
	tok, base, err := c.adminToken(ctx)
	if err != nil {
		return 0, err
	}
	u := base.JoinPath(path)
	if query == nil {
		query = url.Values{}
	}
	if !query.Has("api-version") {
		query.Set("api-version", apiVersion)
	}
	u.RawQuery = query.Encode()
	status, data, err := c.send(ctx, op, method, u, tok, body, nil, c.o.CallTimeout)
	if err != nil {
		return status, wrapOp(op, err)
	}
	if status < 200 || status > 299 {
		return status, newError(op, status, data)
	}
	if out != nil && status != http.StatusNoContent {
		if err := json.Unmarshal(data, out); err != nil {
			return status, &Error{Op: op, Status: status, Message: "the answer is not the expected JSON: " + err.Error(), Retryable: true}
		}
	}
	return status, nil
}

const apiVersion = "6.0-preview"

func wrapOp(op string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Op: op, Message: err.Error(), Retryable: true, Err: err}
}
