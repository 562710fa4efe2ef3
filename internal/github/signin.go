package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/github/auth"
)

// SignInOptions configures SignIn and SignInStatus (the `auth` subcommands).
type SignInOptions struct {
	WebURL    string    // OAuth host; "" derives it from api_url (auth.WebURLFor)
	Out       io.Writer // where the verification URL and code are printed
	Host      string    // this machine's name; "" = os.Hostname()
	Transport http.RoundTripper
	Clock     Clock
	Sleep     auth.SleepFunc
}

func (o *SignInOptions) defaults() {
	if o.Clock == nil {
		o.Clock = auth.SystemClock{}
	}
	if o.Sleep == nil {
		o.Sleep = auth.Sleep
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
}

// deviceFlow is the device flow of cfg's [github.device_flow] over rt, signing in at webURL, or
// when that is empty at the web host cfg.APIURL belongs to.
func deviceFlow(cfg config.GitHub, webURL string, rt http.RoundTripper, clock Clock) (*auth.DeviceFlow, error) {
	if cfg.DeviceFlow == nil || cfg.DeviceFlow.ClientID == "" {
		return nil, errors.New("github.device_flow.client_id is not set: add a [github.device_flow] section with the App's client ID")
	}
	if webURL == "" {
		var err error
		if webURL, err = auth.WebURLFor(cfg.APIURL); err != nil {
			return nil, err
		}
	}
	return &auth.DeviceFlow{WebURL: webURL, ClientID: cfg.DeviceFlow.ClientID, HTTPClient: &http.Client{Transport: rt}, Clock: clock}, nil
}

// SignIn runs the device flow, asks GitHub who signed in (GET /user) and stores the pair in
// <stateDir>/credentials/github-user.json. The previous pair is replaced, not revoked: a daemon
// still using it keeps working until it re-reads the store.
func SignIn(ctx context.Context, cfg config.GitHub, stateDir string, o SignInOptions) (*auth.Credential, error) {
	o.defaults()
	flow, err := deviceFlow(cfg, o.WebURL, o.Transport, o.Clock)
	if err != nil {
		return nil, err
	}
	flow.Sleep = o.Sleep
	cred, err := flow.Login(ctx, o.Out)
	if err != nil {
		return nil, err
	}
	login, err := whoAmI(ctx, cfg.APIURL, cred.AccessToken, o)
	if err != nil {
		return nil, err
	}
	cred.Login, cred.Host = login, o.Host
	store := auth.NewStore(stateDir)
	unlock, err := store.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := store.Save(cred); err != nil {
		return nil, err
	}
	return cred, nil
}

// SignInState is what `auth status` shows. It never holds a token.
type SignInState struct {
	Path             string
	Login            string // from GET /user; "" when GitHub did not accept the token
	StoredLogin      string
	Host             string
	AccessExpiresAt  time.Time // zero: does not expire
	RefreshExpiresAt time.Time
	Expired          bool
	Renewable        bool  // this host can renew the pair
	Check            error // why GitHub did not answer GET /user, if it did not
}

// SignInStatus reads the stored sign-in and checks it with GET /user, without renewing it (a
// renewal rotates the pair, which is the daemon's job).
func SignInStatus(ctx context.Context, cfg config.GitHub, stateDir string, o SignInOptions) (SignInState, error) {
	o.defaults()
	store := auth.NewStore(stateDir)
	c, err := store.Load()
	if err != nil {
		return SignInState{}, err
	}
	now := o.Clock.Now()
	st := SignInState{Path: store.Path(), StoredLogin: c.Login, Host: c.Host, AccessExpiresAt: c.AccessExpiresAt,
		RefreshExpiresAt: c.RefreshExpiresAt, Expired: c.Expired(now), Renewable: c.Renewable(now) && c.Host == o.Host}
	if !st.Expired {
		st.Login, st.Check = whoAmI(ctx, cfg.APIURL, c.AccessToken, o)
	}
	return st, nil
}

// SignOut removes the stored sign-in. It does not revoke the tokens at GitHub.
func SignOut(stateDir string) error { return auth.NewStore(stateDir).Remove() }

func whoAmI(ctx context.Context, apiURL, token string, o SignInOptions) (string, error) {
	c, err := New(Options{APIURL: apiURL, Auth: auth.Static{Value: token, Name: "the new GitHub sign-in"},
		Transport: o.Transport, Clock: o.Clock, Sleep: o.Sleep, MaxRetries: 2})
	if err != nil {
		return "", err
	}
	var u *gh.User
	err = c.call(ctx, Scope{}, op{"GET /user", "look up the signed-in user", perm{}}, func(ctx context.Context) (resp *gh.Response, err error) {
		u, resp, err = c.gh.Users.Get(ctx, "")
		return resp, err
	})
	if err != nil {
		return "", err
	}
	if u.GetLogin() == "" {
		return "", fmt.Errorf("GitHub did not say who signed in (GET /user has no login)")
	}
	return u.GetLogin(), nil
}
