package ghsim

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func admin(t *testing.T, s *Server, method, path string, body, out any) int {
	t.Helper()
	var rd *bytes.Reader
	b, _ := json.Marshal(body)
	rd = bytes.NewReader(b)
	req, _ := http.NewRequest(method, s.URL()+"/_ghsim/admin"+path, rd)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

func TestAdminAPI(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	s := newTestServer(t, Options{Clock: clock})
	admin(t, s, "POST", "/repos", map[string]string{"owner": "acme", "name": "api"}, nil)
	var tok struct{ Token string }
	admin(t, s, "POST", "/tokens", map[string]any{"login": "ops", "expires_in_s": 60}, &tok)
	var job struct{ ID int64 }
	admin(t, s, "POST", "/jobs", map[string]any{"repo": "acme/api", "labels": []string{"linux"}, "duration_ms": 10}, &job)
	var jobs []Job
	admin(t, s, "GET", "/jobs", nil, &jobs)
	if len(jobs) != 1 || jobs[0].ID != job.ID || jobs[0].Status != StatusQueued {
		t.Fatalf("jobs = %+v", jobs)
	}
	if r := get(t, s, tok.Token, "/repos/acme/api/actions/runs", ""); r.StatusCode != http.StatusOK {
		t.Fatalf("admin-made token: %d", r.StatusCode)
	}
	var fault struct{ ID int64 }
	admin(t, s, "POST", "/faults", map[string]any{"kind": "429", "path": "/repos/**", "retry_after_s": 3}, &fault)
	if r := get(t, s, tok.Token, "/repos/acme/api/actions/runs", ""); r.StatusCode != 429 || r.Header.Get("Retry-After") != "3" {
		t.Fatalf("admin fault: %d", r.StatusCode)
	}
	if code := admin(t, s, "DELETE", "/faults", nil, nil); code != http.StatusNoContent {
		t.Fatalf("clear faults: %d", code)
	}
	admin(t, s, "POST", "/clock/advance", map[string]any{"seconds": 61}, nil)
	if r := get(t, s, tok.Token, "/repos/acme/api/actions/runs", ""); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("token after clock advance: %d", r.StatusCode)
	}
	if code := admin(t, s, "POST", "/jobs", map[string]any{"repo": "nope/nope"}, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("job in unknown repo: %d", code)
	}

	// Device flow approved through the admin API.
	admin(t, s, "POST", "/oauth-clients", map[string]string{"client_id": "Iv1.demo"}, nil)
	dc := oauthPost(t, s, "/login/device/code", url.Values{"client_id": {"Iv1.demo"}}, true)
	var pending []string
	admin(t, s, "GET", "/device/pending", nil, &pending)
	if len(pending) != 1 || pending[0] != dc["user_code"] {
		t.Fatalf("pending = %v", pending)
	}
	admin(t, s, "POST", "/device/approve", map[string]string{"user_code": pending[0], "login": "mona"}, nil)
	r := oauthPost(t, s, "/login/oauth/access_token", url.Values{"client_id": {"Iv1.demo"}, "device_code": {dc["device_code"].(string)},
		"grant_type": {deviceGrant}}, true)
	if r["access_token"] == nil {
		t.Fatalf("after admin approve: %v", r)
	}

	// An App registered with its PEM public key.
	key := rsaKey(t)
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&key.PublicKey))})
	var created struct {
		ClientID string `json:"client_id"`
	}
	if code := admin(t, s, "POST", "/apps", map[string]any{"app_id": 9, "public_key_pem": string(pub)}, &created); code != http.StatusOK || created.ClientID != AppClientID(9) {
		t.Fatalf("create app: %d, client_id %q", code, created.ClientID)
	}
	var inst struct{ ID int64 }
	admin(t, s, "POST", "/installations", map[string]any{"app_id": 9, "login": "acme"}, &inst)
	gh := newClient(t, s, appJWTIss(t, key, created.ClientID, clock.Now(), clock.Now().Add(5*time.Minute)))
	if _, _, err := gh.Apps.CreateInstallationToken(t.Context(), inst.ID, nil); err != nil {
		t.Fatalf("installation token for admin-made app: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
