package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/runner-manager/runner-manager/config"
)

// App authenticates as a GitHub App installation. The JWT and the installation tokens (1 h,
// renewed a minute before expiry) are ghinstallation's; App adds finding the installation of an
// owner when the config gives no installation_id, and forcing a new token after a 401.
type App struct {
	appID   int64
	name    string // how errors name the App: its ID or its client ID
	fixedID int64  // configured installation_id; 0 = look up per owner
	baseURL string
	apps    *ghinstallation.AppsTransport
	jwt     *http.Client // requests signed with the App JWT

	mu    sync.Mutex
	ids   map[string]int64 // owner -> installation id (lookups are cached)
	insts map[int64]*ghinstallation.Transport
}

// AppOptions configures NewApp. Transport carries the JWT and token requests (the client passes
// its metering transport so those calls are counted and rate-limited like any other).
type AppOptions struct {
	APIURL         string
	AppID          int64
	ClientID       string // github.app_client_id: the JWT's iss in place of AppID
	InstallationID int64
	PrivateKeyFile string
	Transport      http.RoundTripper
}

// NewApp reads and parses the private key. The key's bytes are never part of an error.
func NewApp(o AppOptions) (*App, error) {
	if _, err := config.CheckSecretFile(o.PrivateKeyFile); err != nil {
		return nil, fmt.Errorf("GitHub App private key: %w", err)
	}
	key, err := os.ReadFile(o.PrivateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("read GitHub App private key: %w (fix github.private_key_file)", err)
	}
	tr := o.Transport
	if tr == nil {
		tr = http.DefaultTransport
	}
	atr, err := appsTransport(tr, o.AppID, o.ClientID, key)
	if err != nil {
		return nil, fmt.Errorf("GitHub App private key %s is not a PEM RSA key: download a new key from the App's settings", o.PrivateKeyFile)
	}
	base := strings.TrimRight(o.APIURL, "/")
	atr.BaseURL = base
	name := fmt.Sprint(o.AppID)
	if o.ClientID != "" {
		name = o.ClientID
	}
	return &App{
		appID: o.AppID, name: name, fixedID: o.InstallationID, baseURL: base, apps: atr,
		jwt: &http.Client{Transport: atr}, ids: map[string]int64{}, insts: map[int64]*ghinstallation.Transport{},
	}, nil
}

// AppID returns the configured App id.
func (a *App) AppID() int64 { return a.appID }

// Describe names the App (and installation when fixed).
func (a *App) Describe() string {
	if a.fixedID != 0 {
		return fmt.Sprintf("GitHub App %s (installation %d)", a.name, a.fixedID)
	}
	return "GitHub App " + a.name
}

// Token returns an installation token for owner's installation.
func (a *App) Token(ctx context.Context, owner string) (string, error) {
	tr, err := a.installation(ctx, owner)
	if err != nil {
		return "", err
	}
	tok, err := tr.Token(ctx)
	if err != nil {
		return "", fmt.Errorf("%s: cannot get an installation token: %w", a.Describe(), redactHTTPError(err))
	}
	return tok, nil
}

// Reload drops the cached installation token (and the owner's looked-up installation), so the
// next Token asks GitHub for a fresh one: an installation token revoked early is replaced at once.
func (a *App) Reload(ctx context.Context, owner string) (bool, error) {
	a.mu.Lock()
	id := a.fixedID
	if id == 0 {
		id = a.ids[owner]
		delete(a.ids, owner)
	}
	_, had := a.insts[id]
	delete(a.insts, id)
	a.mu.Unlock()
	return had, ctx.Err()
}

// InstallationID returns the installation serving owner, looking it up when not configured.
func (a *App) InstallationID(ctx context.Context, owner string) (int64, error) {
	if a.fixedID != 0 {
		return a.fixedID, nil
	}
	a.mu.Lock()
	id, ok := a.ids[owner]
	a.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err := a.findInstallation(ctx, owner)
	if err != nil {
		return 0, err
	}
	a.mu.Lock()
	a.ids[owner] = id
	a.mu.Unlock()
	return id, nil
}

func (a *App) installation(ctx context.Context, owner string) (*ghinstallation.Transport, error) {
	id, err := a.InstallationID(ctx, owner)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	tr, ok := a.insts[id]
	if !ok {
		tr = ghinstallation.NewFromAppsTransport(a.apps, id)
		tr.BaseURL = a.baseURL
		a.insts[id] = tr
	}
	return tr, nil
}

// findInstallation asks GitHub (as the App) where it is installed for owner: an organisation
// first, then a user account, as GET /orgs/{org}/installation and GET /users/{user}/installation.
func (a *App) findInstallation(ctx context.Context, owner string) (int64, error) {
	if owner == "" {
		return 0, errors.New(a.Describe() + ": no installation_id configured and no owner to look it up for")
	}
	for _, kind := range []string{"orgs", "users"} {
		id, status, err := a.lookup(ctx, kind, owner)
		if err != nil {
			return 0, err
		}
		switch status {
		case http.StatusOK:
			return id, nil
		case http.StatusNotFound:
			continue
		case http.StatusUnauthorized:
			return 0, &InvalidCredentialError{Credential: a.Describe(), Reason: "GitHub rejected the App JWT (401): check github.app_id (or app_client_id) and that the private key belongs to this App and was not revoked"}
		default:
			err := fmt.Errorf("%s: find the installation for %s: GitHub answered %d", a.Describe(), owner, status)
			if status >= 500 {
				return 0, &TemporaryError{err}
			}
			return 0, err
		}
	}
	return 0, fmt.Errorf("%s is not installed on %s: install the App on that account (or set github.installation_id)", a.Describe(), owner)
}

func (a *App) lookup(ctx context.Context, kind, owner string) (int64, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.baseURL+"/"+kind+"/"+owner+"/installation", nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	resp, err := a.jwt.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: find the installation for %s: %w", a.Describe(), owner, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, resp.StatusCode, nil
	}
	var body struct {
		ID int64 `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.ID == 0 {
		return 0, 0, fmt.Errorf("%s: find the installation for %s: unreadable answer from GitHub", a.Describe(), owner)
	}
	return body.ID, http.StatusOK, nil
}

// redactHTTPError turns ghinstallation's refresh error into one that keeps the status: a 401/404
// from the token endpoint means the App or installation is gone, which the caller must not retry.
func redactHTTPError(err error) error {
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		if he.Response.StatusCode >= 500 {
			return &TemporaryError{err}
		}
		switch he.Response.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
			return &InvalidCredentialError{Credential: fmt.Sprintf("installation %d", he.InstallationID),
				Reason: fmt.Sprintf("GitHub refused an installation token (%d): the App was uninstalled, suspended, or its key revoked; reinstall the App or fix github.installation_id", he.Response.StatusCode)}
		}
	}
	return err
}

// InvalidCredentialError means the credential itself is no longer accepted and cannot be renewed
// by this process; an operator must act (the Reason says how).
type InvalidCredentialError struct {
	Credential string
	Reason     string
}

func (e *InvalidCredentialError) Error() string { return e.Credential + ": " + e.Reason }

// Unauthorized marks the error for the engine's classification.
func (e *InvalidCredentialError) Unauthorized() bool { return true }

// TemporaryError is a credential failure that may pass (GitHub answered 5xx while minting or
// looking up); the client retries it with backoff. Other credential failures are terminal.
type TemporaryError struct{ Err error }

func (e *TemporaryError) Error() string   { return e.Err.Error() }
func (e *TemporaryError) Unwrap() error   { return e.Err }
func (e *TemporaryError) Temporary() bool { return true }

// Permissions are the permissions GitHub granted owner's installation (name -> "read" or
// "write"), as its current token carries them; a token is fetched first if none is held.
func (a *App) Permissions(ctx context.Context, owner string) (map[string]string, error) {
	tr, err := a.installation(ctx, owner)
	if err != nil {
		return nil, err
	}
	if _, err := tr.Token(ctx); err != nil {
		return nil, fmt.Errorf("%s: cannot get an installation token: %w", a.Describe(), redactHTTPError(err))
	}
	p, err := tr.Permissions()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.Describe(), err)
	}
	// The struct's JSON is GitHub's own "permissions" object: one field per permission granted.
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("%s: read the installation's permissions: %w", a.Describe(), err)
	}
	out := map[string]string{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s: read the installation's permissions: %w", a.Describe(), err)
	}
	return out, nil
}
