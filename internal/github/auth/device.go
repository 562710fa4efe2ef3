package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/redact"
)

// DeviceFlow talks to GitHub's OAuth endpoints (on the web host, not the API host) to sign a user
// in with a device code and to renew the resulting token pair. No client secret is involved.
type DeviceFlow struct {
	WebURL     string // e.g. https://github.com; see WebURLFor
	ClientID   string
	HTTPClient *http.Client
	Clock      Clock
	Sleep      SleepFunc
}

// OAuthError is an error answer from the token endpoint (error, error_description).
type OAuthError struct {
	Code        string
	Description string
}

func (e *OAuthError) Error() string {
	if e.Description == "" {
		return "GitHub sign-in error " + e.Code
	}
	return "GitHub sign-in error " + e.Code + ": " + e.Description
}

// WebURLFor derives the OAuth host from the API URL: api.github.com signs in at github.com;
// GHES (https://ghe.example.com/api/v3) and the simulator sign in on their own host.
func WebURLFor(apiURL string) (string, error) {
	if apiURL == "" {
		return "https://github.com", nil
	}
	u, err := url.Parse(apiURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("github.api_url %q is not a URL", redact.URL(apiURL))
	}
	host := strings.ToLower(u.Hostname())
	if host == "api.github.com" {
		return "https://github.com", nil
	}
	// GitHub Enterprise Cloud with data residency: the API is api.SUBDOMAIN.ghe.com, sign-in is on
	// SUBDOMAIN.ghe.com.
	if sub, ok := strings.CutPrefix(host, "api."); ok && strings.HasSuffix(sub, ".ghe.com") && u.Port() == "" {
		return u.Scheme + "://" + sub, nil
	}
	return u.Scheme + "://" + u.Host, nil
}

type tokenAnswer struct {
	AccessToken           string `json:"access_token"`
	ExpiresIn             int64  `json:"expires_in"`
	RefreshToken          string `json:"refresh_token"`
	RefreshTokenExpiresIn int64  `json:"refresh_token_expires_in"`
	Error                 string `json:"error"`
	ErrorDescription      string `json:"error_description"`
	Interval              int64  `json:"interval"`
}

type codeAnswer struct {
	DeviceCode      string `json:"device_code"`
	UserCode        string `json:"user_code"`
	VerificationURI string `json:"verification_uri"`
	ExpiresIn       int64  `json:"expires_in"`
	Interval        int64  `json:"interval"`
	Error           string `json:"error"`
	ErrorDesc       string `json:"error_description"`
}

// Login runs the device flow: it prints where to go and which code to enter to out, then polls
// at the interval GitHub asks for (5 s more after each slow_down) until the user approves,
// declines, or the code expires. The returned credential has no Login or Host yet.
func (d *DeviceFlow) Login(ctx context.Context, out io.Writer) (*Credential, error) {
	var code codeAnswer
	if err := d.post(ctx, "/login/device/code", url.Values{"client_id": {d.ClientID}}, &code); err != nil {
		return nil, fmt.Errorf("request a GitHub device code: %w", err)
	}
	if code.Error != "" {
		return nil, fmt.Errorf("request a GitHub device code: %w%s", &OAuthError{code.Error, code.ErrorDesc}, remedyFor(code.Error))
	}
	if code.DeviceCode == "" || code.UserCode == "" {
		return nil, errors.New("request a GitHub device code: GitHub's answer has no device or user code")
	}
	fmt.Fprintf(out, "Open %s and enter the code %s\n", code.VerificationURI, code.UserCode)
	interval := 5 * time.Second // RFC 8628's default when the server names none
	if code.Interval > 0 {
		interval = time.Duration(code.Interval) * time.Second
	}
	expiresIn := time.Duration(max(code.ExpiresIn, 1)) * time.Second
	deadline := d.Clock.Now().Add(expiresIn)
	form := url.Values{"client_id": {d.ClientID}, "device_code": {code.DeviceCode},
		"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}}
	for {
		if err := d.Sleep(ctx, interval); err != nil {
			return nil, err
		}
		if !d.Clock.Now().Before(deadline) {
			return nil, errors.New("the GitHub device code expired before it was entered: run `runner-manager auth login` again")
		}
		var ans tokenAnswer
		if err := d.post(ctx, "/login/oauth/access_token", form, &ans); err != nil {
			return nil, fmt.Errorf("poll for the GitHub sign-in: %w", err)
		}
		switch ans.Error {
		case "":
			if ans.AccessToken == "" {
				return nil, errors.New("poll for the GitHub sign-in: GitHub's answer has no access token")
			}
			return d.credential(ans), nil
		case "authorization_pending":
		case "slow_down":
			// GitHub adds 5 s to the interval and says the new one; trust it when it is larger.
			interval += 5 * time.Second
			if s := time.Duration(ans.Interval) * time.Second; s > interval {
				interval = s
			}
		case "expired_token":
			return nil, errors.New("the GitHub device code expired before it was entered: run `runner-manager auth login` again")
		case "access_denied":
			return nil, errors.New("the GitHub sign-in was declined in the browser: run `runner-manager auth login` again and approve it")
		default:
			return nil, fmt.Errorf("poll for the GitHub sign-in: %w%s", &OAuthError{ans.Error, ans.ErrorDescription}, remedyFor(ans.Error))
		}
	}
}

// Refresh trades a refresh token for a new pair. Both old tokens stop working once GitHub answers.
func (d *DeviceFlow) Refresh(ctx context.Context, refreshToken string) (*Credential, error) {
	var ans tokenAnswer
	form := url.Values{"client_id": {d.ClientID}, "grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	if err := d.post(ctx, "/login/oauth/access_token", form, &ans); err != nil {
		return nil, fmt.Errorf("renew the GitHub sign-in: %w", err)
	}
	if ans.Error != "" {
		return nil, &OAuthError{ans.Error, ans.ErrorDescription}
	}
	if ans.AccessToken == "" {
		return nil, errors.New("renew the GitHub sign-in: GitHub's answer has no access token")
	}
	return d.credential(ans), nil
}

func (d *DeviceFlow) credential(a tokenAnswer) *Credential {
	now := d.Clock.Now()
	c := &Credential{AccessToken: a.AccessToken, RefreshToken: a.RefreshToken, ClientID: d.ClientID, IssuedAt: now}
	if a.ExpiresIn > 0 {
		c.AccessExpiresAt = now.Add(time.Duration(a.ExpiresIn) * time.Second)
	}
	if a.RefreshToken != "" && a.RefreshTokenExpiresIn > 0 {
		c.RefreshExpiresAt = now.Add(time.Duration(a.RefreshTokenExpiresIn) * time.Second)
	}
	return c
}

// post sends a form and decodes a JSON answer. Transport errors are reported without the URL's
// query or the form, which can carry codes and tokens.
func (d *DeviceFlow) post(ctx context.Context, path string, form url.Values, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(d.WebURL, "/")+path, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("bad sign-in URL %q", d.WebURL)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	hc := d.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("cannot reach %s: %w", d.WebURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read answer from %s: %w", d.WebURL, err)
	}
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%s%s answered %d: try again later", d.WebURL, path, resp.StatusCode)
	}
	// The token endpoint reports OAuth errors with 200 and sometimes 4xx; both carry {"error":...}.
	if jerr := json.Unmarshal(b, into); jerr != nil {
		return fmt.Errorf("%s%s answered %d with an unreadable body", d.WebURL, path, resp.StatusCode)
	}
	return nil
}

func remedyFor(code string) string {
	switch code {
	case "incorrect_client_credentials":
		return " (check github.device_flow.client_id: it is the App's client ID, not its App ID)"
	case "device_flow_disabled":
		return " (enable Device Flow in the GitHub App's settings)"
	}
	return ""
}
