package ghsim

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

type deviceCode struct {
	clientID  string
	userCode  string
	interval  time.Duration
	expiresAt time.Time
	lastPoll  time.Time
	state     string // pending, approved, denied, used
	login     string
}

type refreshToken struct {
	clientID  string
	login     string
	access    string // the access token issued with it; rotation revokes both
	expiresAt time.Time
}

// CreateOAuthClient registers a client_id the device flow accepts (a GitHub App's client ID).
func (s *Server) CreateOAuthClient(clientID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oauthClients[clientID] = true
}

// ApproveDevice plays the user entering userCode at /login/device and approving as login.
func (s *Server) ApproveDevice(userCode, login string) error {
	return s.decideDevice(userCode, login, "approved")
}

// DenyDevice plays the user cancelling the authorization of userCode.
func (s *Server) DenyDevice(userCode string) error { return s.decideDevice(userCode, "", "denied") }

func (s *Server) decideDevice(userCode, login, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.devices {
		if strings.EqualFold(d.userCode, userCode) && d.state == "pending" {
			d.state, d.login = state, login
			if login != "" {
				s.account(login, false)
			}
			return nil
		}
	}
	return errUnknown("pending device code", userCode)
}

// PendingUserCodes lists the user codes waiting for approval (in no particular order).
func (s *Server) PendingUserCodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, d := range s.devices {
		if d.state == "pending" && s.now().Before(d.expiresAt) {
			out = append(out, d.userCode)
		}
	}
	return out
}

// oauthReply answers in JSON when the client asks for it, else form-encoded, as GitHub does.
func oauthReply(w http.ResponseWriter, r *http.Request, fields map[string]any) {
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		writeJSON(w, http.StatusOK, fields)
		return
	}
	v := url.Values{}
	for k, f := range fields {
		switch x := f.(type) {
		case string:
			v.Set(k, x)
		case int64:
			v.Set(k, strconv.FormatInt(x, 10))
		}
	}
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(v.Encode()))
}

// oauthError is a token-endpoint error: HTTP 200 with error, error_description and error_uri.
func oauthError(w http.ResponseWriter, r *http.Request, code, desc string, extra map[string]any) {
	f := map[string]any{"error": code, "error_description": desc,
		"error_uri": "https://docs.github.com/developers/apps/authorizing-oauth-apps#error-codes-for-the-device-flow"}
	for k, v := range extra {
		f[k] = v
	}
	oauthReply(w, r, f)
}

// oauthParams reads parameters from the query, a form body or a JSON body.
func oauthParams(r *http.Request) url.Values {
	if strings.Contains(r.Header.Get("Content-Type"), "application/json") {
		var m map[string]any
		v := r.URL.Query()
		if json.NewDecoder(r.Body).Decode(&m) == nil {
			for k, x := range m {
				if str, ok := x.(string); ok {
					v.Set(k, str)
				}
			}
		}
		return v
	}
	_ = r.ParseForm()
	return r.Form
}

func userCode() string {
	const alphabet = "BCDFGHJKLMNPQRSTVWXZ23456789"
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:4]) + "-" + string(b[4:])
}

// handleDeviceCode serves POST /login/device/code.
func (s *Server) handleDeviceCode(w http.ResponseWriter, r *http.Request, q url.Values, cid string) {
	dc := newSecret("") + newSecret("")[:4] // 40 characters, like GitHub's
	d := &deviceCode{clientID: cid, userCode: userCode(), interval: s.opts.DeviceInterval,
		expiresAt: s.now().Add(s.opts.DeviceCodeTTL), state: "pending"}
	s.devices[dc] = d
	oauthReply(w, r, map[string]any{"device_code": dc, "user_code": d.userCode,
		"verification_uri": s.URL() + "/login/device", "expires_in": int64(s.opts.DeviceCodeTTL.Seconds()),
		"interval": int64(d.interval.Seconds())})
}

// handleAccessTokenOAuth serves POST /login/oauth/access_token for the device and refresh grants.
func (s *Server) handleAccessTokenOAuth(w http.ResponseWriter, r *http.Request, q url.Values, cid string) {
	switch q.Get("grant_type") {
	case deviceGrant:
		s.pollDevice(w, r, cid, q.Get("device_code"))
	case "refresh_token":
		rt := s.refresh[q.Get("refresh_token")]
		if rt == nil || rt.clientID != cid || !s.now().Before(rt.expiresAt) {
			oauthError(w, r, "bad_refresh_token", "The refresh token passed is incorrect or expired.", nil)
			return
		}
		// Rotation: the used refresh token and the access token issued with it stop working.
		delete(s.refresh, q.Get("refresh_token"))
		delete(s.tokens, rt.access)
		s.issueUserToken(w, r, cid, rt.login)
	default:
		oauthError(w, r, "unsupported_grant_type", "The grant type must be "+deviceGrant+" or refresh_token.", nil)
	}
}

func (s *Server) pollDevice(w http.ResponseWriter, r *http.Request, cid, code string) {
	d := s.devices[code]
	now := s.now()
	switch {
	case d == nil || d.clientID != cid || d.state == "used":
		oauthError(w, r, "incorrect_device_code", "The device_code provided is not valid.", nil)
	case !now.Before(d.expiresAt):
		oauthError(w, r, "expired_token", "The device_code has expired.", nil)
	case d.state == "denied":
		oauthError(w, r, "access_denied", "The authorization request was denied.", nil)
	case !d.lastPoll.IsZero() && now.Sub(d.lastPoll) < d.interval:
		d.lastPoll = now
		d.interval += 5 * time.Second
		oauthError(w, r, "slow_down", "Too many requests have been made in the same timeframe.",
			map[string]any{"interval": int64(d.interval.Seconds())})
	case d.state == "pending":
		d.lastPoll = now
		oauthError(w, r, "authorization_pending", "The authorization request is still pending.", nil)
	default:
		d.state = "used"
		s.issueUserToken(w, r, cid, d.login)
	}
}

// issueUserToken mints a ghu_ access token and a ghr_ refresh token for login. Callers hold s.mu.
func (s *Server) issueUserToken(w http.ResponseWriter, r *http.Request, cid, login string) {
	now := s.now()
	access, ref := newSecret("ghu_"), newSecret("ghr_")
	s.tokens[access] = &token{kind: "user", login: login, expiresAt: now.Add(s.opts.UserTokenTTL),
		bucket: s.bucketFor("user:" + strings.ToLower(login))}
	s.refresh[ref] = &refreshToken{clientID: cid, login: login, access: access, expiresAt: now.Add(s.opts.RefreshTokenTTL)}
	oauthReply(w, r, map[string]any{"access_token": access, "token_type": "bearer", "scope": "",
		"expires_in": int64(s.opts.UserTokenTTL.Seconds()), "refresh_token": ref,
		"refresh_token_expires_in": int64(s.opts.RefreshTokenTTL.Seconds())})
}

// handleUser serves GET /user: the login behind a PAT or user token.
func (s *Server) handleUser(w http.ResponseWriter, r *http.Request, p *principal) {
	if p.tok.kind == "installation" {
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	a := s.account(p.tok.login, false)
	u := s.apiAccount(a)
	u.Name = github.String(a.login)
	writeJSON(w, http.StatusOK, u)
}
