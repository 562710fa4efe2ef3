package ghsim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
)

// These tests speak the wire protocol by hand (not through internal/scaleset) so they pin the
// shapes themselves; each cites the facts file's section (testdata/scaleset/README.md).

type actionsConn struct {
	t      *testing.T
	s      *Server
	base   string // Actions-service URL from runner-registration
	admin  string
	queue  string // messageQueueUrl
	qtoken string
	setID  int64
	sessID string
}

type resp struct {
	code int
	body []byte
	hdr  http.Header
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

func do(t *testing.T, method, url, auth string, body any, hdr map[string]string) resp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, b, res.Header}
}

// connect runs the token chain for org (scaleset.md section 1) and returns a connection with the admin token.
func connect(t *testing.T, s *Server, org string) *actionsConn {
	t.Helper()
	tok := s.AddToken(TokenOptions{})
	r := do(t, "POST", s.APIURL()+"/orgs/"+org+"/actions/runners/registration-token", "Bearer "+tok, nil, nil)
	if r.code != http.StatusCreated {
		t.Fatalf("registration-token: %d %s", r.code, r.body)
	}
	reg := r.json(t)["token"].(string)
	r = do(t, "POST", s.APIURL()+"/actions/runner-registration", "RemoteAuth "+reg,
		map[string]string{"url": "https://github.com/" + org, "runner_event": "register"}, nil)
	if r.code != http.StatusOK {
		t.Fatalf("runner-registration: %d %s", r.code, r.body)
	}
	m := r.json(t)
	return &actionsConn{t: t, s: s, base: m["url"].(string), admin: m["token"].(string)}
}

func (c *actionsConn) call(method, path string, body any) resp {
	c.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return do(c.t, method, c.base+path+sep+"api-version=6.0-preview", "Bearer "+c.admin, body, nil)
}

func (c *actionsConn) createSet(name string) {
	c.t.Helper()
	r := c.call("POST", "_apis/runtime/runnerscalesets", map[string]any{"name": name, "runnerGroupId": 1,
		"labels": []map[string]string{{"type": "System", "name": name}}, "RunnerSetting": map[string]any{}})
	if r.code != http.StatusOK {
		c.t.Fatalf("create set: %d %s", r.code, r.body)
	}
	c.setID = int64(r.json(c.t)["id"].(float64))
}

func (c *actionsConn) setPath(rest string) string {
	return "_apis/runtime/runnerscalesets/" + strconv.FormatInt(c.setID, 10) + rest
}

func (c *actionsConn) openSession(owner string) resp {
	c.t.Helper()
	r := c.call("POST", c.setPath("/sessions"), map[string]string{"sessionId": "00000000-0000-0000-0000-000000000000", "ownerName": owner})
	if r.code == http.StatusOK {
		m := r.json(c.t)
		c.queue, c.qtoken, c.sessID = m["messageQueueUrl"].(string), m["messageQueueAccessToken"].(string), m["sessionId"].(string)
	}
	return r
}

func (c *actionsConn) get(last int64, capacity string) resp {
	c.t.Helper()
	u := c.queue
	if last > 0 {
		u += "&lastMessageId=" + strconv.FormatInt(last, 10)
	}
	return do(c.t, "GET", u, "Bearer "+c.qtoken, nil, map[string]string{
		"Accept": "application/json; api-version=6.0-preview", "X-ScaleSetMaxCapacity": capacity})
}

func (c *actionsConn) ack(id int64) resp {
	c.t.Helper()
	path, query, _ := strings.Cut(c.queue, "?")
	return do(c.t, "DELETE", path+"/"+strconv.FormatInt(id, 10)+"?"+query, "Bearer "+c.qtoken, nil, nil)
}

// events decodes a message's string body (scaleset.md section 3).
func events(t *testing.T, m map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := json.Unmarshal([]byte(m["body"].(string)), &out); err != nil {
		t.Fatalf("body is not a JSON array string: %v", err)
	}
	return out
}

func jsonKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sameKeys checks that got has exactly the keys of testdata/scaleset/<file>.
func sameKeys(t *testing.T, file string, got map[string]any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "scaleset", file))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if w, g := jsonKeys(want), jsonKeys(got); !slices.Equal(w, g) {
		t.Errorf("%s: keys %v, want %v", file, g, w)
	}
}

func newScaleSetServer(t *testing.T, o ActionsOptions) (*Server, *FakeClock) {
	t.Helper()
	clock := NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := newTestServer(t, Options{Clock: clock, Actions: o})
	s.CreateRepo("acme", "api")
	return s, clock
}

func TestAuthChainShapes(t *testing.T) { // section 1
	s, clock := newScaleSetServer(t, ActionsOptions{})
	tok := s.AddToken(TokenOptions{})
	r := do(t, "POST", s.URL()+"/orgs/acme/actions/runners/registration-token", "Bearer "+tok, nil, nil)
	if r.code != http.StatusCreated {
		t.Fatalf("registration token: %d, want 201", r.code)
	}
	sameKeys(t, "registration-token.json", r.json(t))
	reg := r.json(t)["token"].(string)
	cases := []struct {
		name, auth, url, event string
		want                   int
	}{
		{"bearer is not RemoteAuth", "Bearer " + reg, "https://github.com/acme", "register", 401},
		{"unknown token", "RemoteAuth nope", "https://github.com/acme", "register", 401},
		{"another scope", "RemoteAuth " + reg, "https://github.com/acme/api", "register", 403},
		{"wrong event", "RemoteAuth " + reg, "https://github.com/acme", "remove", 422},
		{"ok", "RemoteAuth " + reg, "https://github.com/acme", "register", 200},
	}
	for _, c := range cases {
		r := do(t, "POST", s.URL()+"/actions/runner-registration", c.auth, map[string]string{"url": c.url, "runner_event": c.event}, nil)
		if r.code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, r.code, r.body, c.want)
		}
		if r.code != http.StatusOK {
			continue
		}
		m := r.json(t)
		delete(m, "token_schema") // our addition; the facts name url and token
		sameKeys(t, "runner-registration.json", m)
		if u := m["url"].(string); !strings.HasPrefix(u, s.ActionsURL()+"/") || u == s.ActionsURL()+"/" {
			t.Errorf("service URL %q: want the Actions host with a path prefix", u)
		}
		var claims jwt.RegisteredClaims
		if _, _, err := jwt.NewParser().ParseUnverified(m["token"].(string), &claims); err != nil || claims.ExpiresAt == nil {
			t.Fatalf("admin token is not a JWT with exp: %v", err)
		}
		if got := claims.ExpiresAt.Sub(clock.Now()); got != time.Hour {
			t.Errorf("admin token lives %s, want 1h", got)
		}
	}
	// The admin token stops working at exp.
	c := connect(t, s, "acme")
	if r := c.call("GET", "_apis/runtime/runnerscalesets?name=x", nil); r.code != 200 {
		t.Fatalf("fresh admin token: %d", r.code)
	}
	clock.Advance(time.Hour)
	if r := c.call("GET", "_apis/runtime/runnerscalesets?name=x", nil); r.code != 401 {
		t.Errorf("expired admin token: %d, want 401", r.code)
	}
}

func TestAdminCallShapes(t *testing.T) { // section 2a
	s, _ := newScaleSetServer(t, ActionsOptions{})
	c := connect(t, s, "acme")
	if r := do(t, "GET", c.base+"_apis/runtime/runnerscalesets?name=x", "Bearer "+c.admin, nil, nil); r.code != 400 {
		t.Errorf("without api-version: %d, want 400", r.code)
	}
	r := c.call("GET", "_apis/runtime/runnergroups/?groupName=default", nil)
	if r.code != 200 || r.json(t)["count"].(float64) != 1 {
		t.Fatalf("runner group default: %d %s", r.code, r.body)
	}
	sameKeys(t, "runnergroups.json", r.json(t))
	if g := r.json(t)["value"].([]any)[0].(map[string]any); g["id"].(float64) != 1 {
		t.Errorf("default group id %v, want 1", g["id"])
	}
	c.createSet("linux")
	r = c.call("GET", "_apis/runtime/runnerscalesets?runnerGroupId=1&name=linux", nil)
	if r.code != 200 || r.json(t)["count"].(float64) != 1 {
		t.Fatalf("set by name: %d %s", r.code, r.body)
	}
	sameKeys(t, "scaleset.json", r.json(t)["value"].([]any)[0].(map[string]any))
	type step struct {
		name, method, path string
		body               any
		want               int
		typeName           string
	}
	steps := []step{
		{"by id", "GET", c.setPath(""), nil, 200, ""},
		{"unknown id", "GET", "_apis/runtime/runnerscalesets/999999", nil, 404, "RunnerScaleSetNotFoundException"},
		{"duplicate name", "POST", "_apis/runtime/runnerscalesets", map[string]any{"name": "LINUX", "runnerGroupId": 1}, 409, "RunnerScaleSetExistsException"},
		{"partial update merges", "PATCH", c.setPath(""), map[string]any{"RunnerSetting": map[string]any{"disableUpdate": true}}, 200, ""},
		// GitHub's client (actions/scaleset) sends "RunnerSetting":{} with every PATCH: it keeps disableUpdate.
		{"empty RunnerSetting keeps", "PATCH", c.setPath(""), map[string]any{"name": "linux", "RunnerSetting": map[string]any{}}, 200, ""},
		{"session", "POST", c.setPath("/sessions"), map[string]any{"ownerName": "host-a"}, 200, ""},
		{"second session", "POST", c.setPath("/sessions"), map[string]any{"ownerName": "host-b"}, 409, "RunnerScaleSetSessionConflictException"},
		{"refresh unknown", "PATCH", c.setPath("/sessions/nope"), nil, 404, "RunnerAdminException"},
		{"delete unknown session", "DELETE", c.setPath("/sessions/nope"), nil, 400, "RunnerScaleSetSessionExpiredException"},
		{"jit", "POST", c.setPath("/generatejitconfig"), map[string]any{"name": "r1", "workFolder": ""}, 200, ""},
		{"jit duplicate", "POST", c.setPath("/generatejitconfig"), map[string]any{"name": "r1", "workFolder": ""}, 409, "AgentExistsException"},
		{"agent by name", "GET", "_apis/distributedtask/pools/0/agents?agentName=r1", nil, 200, ""},
		{"unknown agent", "GET", "_apis/distributedtask/pools/0/agents/999999", nil, 404, "AgentNotFoundException"},
		{"acquirable none", "GET", c.setPath("/acquirablejobs"), nil, 204, ""},
	}
	for _, st := range steps {
		r := c.call(st.method, st.path, st.body)
		if r.code != st.want {
			t.Errorf("%s: %d %s, want %d", st.name, r.code, r.body, st.want)
			continue
		}
		if st.typeName != "" && !strings.Contains(string(r.body), st.typeName) {
			t.Errorf("%s: body %s, want typeName %s", st.name, r.body, st.typeName)
		}
		switch st.name {
		case "partial update merges", "empty RunnerSetting keeps":
			m := r.json(t)
			if m["name"] != "linux" || m["RunnerSetting"].(map[string]any)["disableUpdate"] != true {
				t.Errorf("PATCH did not merge: %s", r.body)
			}
		case "session":
			sameKeys(t, "session.json", r.json(t))
		case "second session":
			sameKeys(t, "session-conflict.json", r.json(t))
			if !strings.Contains(string(r.body), "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionConflictException, GitHub.Actions.Runtime.WebApi") {
				t.Errorf("conflict typeName is not the assembly-qualified name: %s", r.body)
			}
		case "jit":
			m := r.json(t)
			sameKeys(t, "jit.json", m)
			sameKeys(t, "agent.json", m["runner"].(map[string]any))
			cfg, err := runnerproto.Decode(m["encodedJITConfig"].(string))
			if err != nil || cfg.ScaleSetID != c.setID {
				t.Errorf("JIT config does not name the set: %+v %v", cfg, err)
			}
		case "agent by name":
			v := r.json(t)["value"].([]any)
			if len(v) != 1 {
				t.Fatalf("agent by name: %s", r.body)
			}
			sameKeys(t, "agent.json", v[0].(map[string]any))
			id := strconv.FormatInt(int64(v[0].(map[string]any)["id"].(float64)), 10)
			if r := c.call("GET", "_apis/distributedtask/pools/0/agents/"+id, nil); r.code != 200 {
				t.Errorf("agent by id: %d", r.code)
			}
			if r := c.call("DELETE", "_apis/distributedtask/pools/0/agents/"+id, nil); r.code != 204 {
				t.Errorf("delete idle agent: %d, want 204", r.code)
			}
		}
	}
	if r := c.call("DELETE", c.setPath(""), nil); r.code != 204 {
		t.Errorf("delete set: %d, want 204", r.code)
	}
	if r := c.call("POST", c.setPath("/sessions"), map[string]any{"ownerName": "h"}); r.code != 404 || !strings.Contains(string(r.body), "RunnerScaleSetNotFoundException") {
		t.Errorf("session on a deleted set: %d %s, want 404 RunnerScaleSetNotFoundException", r.code, r.body)
	}
}
