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
	"github.com/runner-manager/runner-manager/internal/livetest"
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

// takeJob plays a scale-set runner through the fake-runner protocol: connect and acquire.
func takeJob(t *testing.T, s *Server, c *actionsConn, name string) (runnerproto.JITConfig, int64) {
	t.Helper()
	r := c.call("POST", c.setPath("/generatejitconfig"), map[string]any{"name": name, "workFolder": ""})
	if r.code != 200 {
		t.Fatalf("jit: %d %s", r.code, r.body)
	}
	cfg, err := runnerproto.Decode(r.json(t)["encodedJITConfig"].(string))
	if err != nil {
		t.Fatal(err)
	}
	hello := runnerproto.Hello{RunnerID: cfg.RunnerID, Credential: cfg.Credential}
	do(t, "POST", s.URL()+"/_ghsim/runner/connect", "", hello, nil)
	a := do(t, "POST", s.URL()+"/_ghsim/runner/acquire", "", hello, nil)
	if a.code != 200 {
		return cfg, 0
	}
	return cfg, int64(a.json(t)["job_id"].(float64))
}

func TestQueueLifecycle(t *testing.T) { // sections 2b and 3
	s, clock := newScaleSetServer(t, ActionsOptions{LongPoll: 50 * time.Millisecond, AssignTimeout: 2 * time.Hour})
	c := connect(t, s, "acme")
	c.createSet("linux")
	if r := c.openSession("host-a"); r.code != 200 {
		t.Fatalf("session: %d", r.code)
	}
	// Empty queue: 202 once the long poll ends.
	if r := c.get(0, "1"); r.code != http.StatusAccepted {
		t.Fatalf("empty poll: %d, want 202", r.code)
	}
	if r := c.get(0, "x"); r.code != 400 || !strings.HasPrefix(r.hdr.Get("Content-Type"), "text/plain") {
		t.Errorf("bad capacity: %d %s, want 400 text/plain", r.code, r.hdr.Get("Content-Type"))
	}
	// A job for another label stays with classic runners; two for the set wait for capacity 1.
	other, _ := s.QueueJob("acme/api", []string{"self-hosted", "gpu"}, time.Second)
	j1, _ := s.QueueJob("acme/api", []string{"linux"}, time.Second)
	j2, _ := s.QueueJob("acme/api", []string{"linux"}, time.Second)
	r := c.get(0, "1")
	if r.code != 200 {
		t.Fatalf("poll: %d %s", r.code, r.body)
	}
	m := r.json(t)
	sameKeys(t, "message.json", m)
	stats := m["statistics"].(map[string]any)
	if stats["totalAssignedJobs"].(float64) != 1 || stats["totalAvailableJobs"].(float64) != 1 {
		t.Errorf("capacity 1: statistics %v, want 1 assigned and 1 available", stats)
	}
	ev := events(t, m)
	if len(ev) != 1 || ev[0]["messageType"] != "JobAssigned" {
		t.Fatalf("events %v, want one JobAssigned", ev)
	}
	sameKeys(t, "job-assigned.json", ev[0])
	id := int64(m["messageId"].(float64))
	if id < firstMessageID {
		t.Errorf("message id %d: want large ids", id)
	}
	// Redelivered until acknowledged; lastMessageId skips it.
	if r := c.get(0, "1"); int64(r.json(t)["messageId"].(float64)) != id {
		t.Errorf("unacknowledged message not redelivered")
	}
	if r := c.get(id, "1"); r.code != http.StatusAccepted {
		t.Errorf("poll after lastMessageId: %d, want 202", r.code)
	}
	if r := c.ack(id); r.code != 204 {
		t.Fatalf("ack: %d", r.code)
	}
	if r := c.ack(id); r.code != 404 {
		t.Errorf("second ack: %d, want 404", r.code)
	}
	// A scale-set runner takes the assigned job; a classic one never does.
	_, got := takeJob(t, s, c, "r1")
	if got != j1 {
		t.Fatalf("scale-set runner took job %d, want %d", got, j1)
	}
	r = c.get(id, "1")
	ev = events(t, r.json(t))
	if len(ev) != 1 || ev[0]["messageType"] != "JobStarted" {
		t.Fatalf("events %v, want JobStarted", ev)
	}
	sameKeys(t, "job-started.json", ev[0])
	id = int64(r.json(t)["messageId"].(float64))
	c.ack(id)
	if err := s.FinishJob(j1, "success", true); err != nil {
		t.Fatal(err)
	}
	r = c.get(id, "1")
	ev = events(t, r.json(t))
	if len(ev) != 2 || ev[0]["messageType"] != "JobCompleted" || ev[0]["result"] != "succeeded" || ev[1]["messageType"] != "JobAssigned" {
		t.Fatalf("events %v, want JobCompleted(succeeded) then JobAssigned of the second job", ev)
	}
	sameKeys(t, "job-completed.json", ev[0])
	c.ack(int64(r.json(t)["messageId"].(float64)))
	if j, _ := s.Job(other); j.Status != StatusQueued {
		t.Errorf("the classic job was touched: %+v", j)
	}
	// Queue token: 401 once expired, a refresh (PATCH) issues a new one.
	clock.Advance(50 * time.Minute)
	if r := c.get(0, "1"); r.code != 401 {
		t.Fatalf("expired queue token: %d, want 401", r.code)
	}
	r = c.call("PATCH", c.setPath("/sessions/"+c.sessID), nil)
	if r.code != 200 || r.json(t)["messageQueueAccessToken"] == c.qtoken {
		t.Fatalf("refresh: %d, want 200 with a new token", r.code)
	}
	c.qtoken = r.json(t)["messageQueueAccessToken"].(string)
	if r := c.get(0, "1"); r.code != 202 {
		t.Errorf("poll after refresh: %d, want 202", r.code)
	}
	_ = j2
	if leaks := s.CredentialLeaks(); len(leaks) != 0 {
		t.Errorf("leaks: %v", leaks)
	}
}

func TestBusyRunnerRemoval(t *testing.T) { // section 2a, "remove runner"
	s, _ := newScaleSetServer(t, ActionsOptions{LongPoll: 10 * time.Millisecond})
	c := connect(t, s, "acme")
	c.createSet("linux")
	c.openSession("h")
	s.QueueJob("acme/api", []string{"linux"}, -1)
	c.get(0, "1")
	cfg, jid := takeJob(t, s, c, "r1")
	if jid == 0 {
		t.Fatal("no job taken")
	}
	path := "_apis/distributedtask/pools/0/agents/" + strconv.FormatInt(cfg.RunnerID, 10)
	if r := c.call("DELETE", path, nil); r.code != 400 || !strings.Contains(string(r.body), "JobStillRunningException") {
		t.Errorf("delete busy: %d %s, want 400 JobStillRunningException", r.code, r.body)
	}
}

func TestSessionExpiry(t *testing.T) { // section 3, "One session per scale set"
	s, clock := newScaleSetServer(t, ActionsOptions{LongPoll: 200 * time.Millisecond, SessionExpiry: time.Minute})
	a := connect(t, s, "acme")
	a.createSet("linux")
	a.openSession("host-a")
	b := connect(t, s, "acme")
	b.setID = a.setID
	// A session being polled is never stale, however long ago it was opened.
	done := make(chan resp)
	go func() { done <- a.get(0, "1") }()
	livetest.Eventually(t, "a poll in flight", func() bool { return s.ScaleSets()[0].Polling })
	clock.Advance(30 * time.Minute)
	if r := b.openSession("host-b"); r.code != 409 {
		t.Fatalf("while polled: %d, want 409", r.code)
	}
	<-done
	// Unpolled for less than the expiry: still in the way.
	clock.Advance(59 * time.Second)
	if r := b.openSession("host-b"); r.code != 409 {
		t.Fatalf("before expiry: %d, want 409", r.code)
	}
	clock.Advance(time.Second)
	if r := b.openSession("host-b"); r.code != 200 {
		t.Fatalf("after expiry: %d %s, want 200", r.code, r.body)
	}
	if r := a.get(0, "1"); r.code != 401 {
		t.Errorf("replaced session's token: %d, want 401", r.code)
	}
	if r := b.call("DELETE", b.setPath("/sessions/"+b.sessID), nil); r.code != 204 {
		t.Errorf("delete session: %d", r.code)
	}
	if r := a.openSession("host-a"); r.code != 200 {
		t.Errorf("after delete: %d, want 200", r.code)
	}
	// The admin snapshot counts every session created and every create refused (e2e/fleet proves
	// with it that a fleet holds one session and its followers never ask for one).
	if got := s.ScaleSets()[0]; got.Opened != 3 || got.Conflicts != 2 {
		t.Errorf("sessions opened %d, conflicts %d; want 3 and 2", got.Opened, got.Conflicts)
	}
}

func TestGHESAcquire(t *testing.T) { // section 2b "Acquire jobs", section 3 "Flows"
	s, _ := newScaleSetServer(t, ActionsOptions{LongPoll: 20 * time.Millisecond, GHES: true})
	c := connect(t, s, "acme")
	c.createSet("linux")
	c.openSession("h")
	s.QueueJob("acme/api", []string{"linux"}, time.Second)
	r := c.get(0, "5")
	ev := events(t, r.json(t))
	if len(ev) != 1 || ev[0]["messageType"] != "JobAvailable" {
		t.Fatalf("events %v, want JobAvailable", ev)
	}
	sameKeys(t, "job-available.json", ev[0])
	c.ack(int64(r.json(t)["messageId"].(float64)))
	if r := c.call("GET", c.setPath("/acquirablejobs"), nil); r.code != 200 || r.json(t)["count"].(float64) != 1 {
		t.Errorf("acquirable: %d %s", r.code, r.body)
	}
	// Not acquired: nothing is assigned, however often the listener polls.
	if r := c.get(0, "5"); r.code != 202 {
		t.Fatalf("poll before acquire: %d, want 202", r.code)
	}
	rq := ev[0]["runnerRequestId"].(float64)
	acq := do(t, "POST", ev[0]["acquireJobUrl"].(string)+"?api-version=6.0-preview", "Bearer "+c.qtoken, []float64{rq}, nil)
	if acq.code != 200 || acq.json(t)["count"].(float64) != 1 {
		t.Fatalf("acquire: %d %s", acq.code, acq.body)
	}
	if r := do(t, "POST", ev[0]["acquireJobUrl"].(string)+"?api-version=6.0-preview", "Bearer "+c.admin, []float64{rq}, nil); r.code != 401 {
		t.Errorf("acquire with the admin token: %d, want 401 (it takes the queue token)", r.code)
	}
	r = c.get(0, "5")
	if ev := events(t, r.json(t)); len(ev) != 1 || ev[0]["messageType"] != "JobAssigned" {
		t.Fatalf("after acquire: %v, want JobAssigned", ev)
	}
}

func TestAssignTimeoutRequeues(t *testing.T) { // section 3, "Reassignment"
	s, clock := newScaleSetServer(t, ActionsOptions{LongPoll: 10 * time.Millisecond, AssignTimeout: time.Minute})
	c := connect(t, s, "acme")
	c.createSet("linux")
	c.openSession("h")
	jid, _ := s.QueueJob("acme/api", []string{"linux"}, time.Second)
	var kinds []string
	for range 5 {
		r := c.get(0, "1")
		if r.code == 200 {
			for _, e := range events(t, r.json(t)) {
				res, _ := e["result"].(string)
				kinds = append(kinds, e["messageType"].(string)+":"+res)
			}
			c.ack(int64(r.json(t)["messageId"].(float64)))
		}
		clock.Advance(time.Minute)
	}
	want := []string{"JobAssigned:", "JobCompleted:canceled", "JobAssigned:", "JobCompleted:canceled", "JobAssigned:",
		"JobCompleted:canceled", "JobAssigned:", "JobCompleted:canceled"}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	if j, _ := s.Job(jid); j.Status != StatusCompleted || j.Conclusion != "cancelled" {
		t.Errorf("job after 3 requeues: %+v, want completed/cancelled", j)
	}
}

func TestCredentialLeaksAreRecorded(t *testing.T) {
	s, _ := newScaleSetServer(t, ActionsOptions{})
	c := connect(t, s, "acme")
	tok := s.AddToken(TokenOptions{})
	do(t, "GET", c.base+"_apis/runtime/runnerscalesets?api-version=6.0-preview", "Bearer "+tok, nil, nil)
	do(t, "GET", s.URL()+"/orgs/acme/actions/runners", "Bearer "+c.admin, nil, nil)
	if got := s.CredentialLeaks(); len(got) != 2 || strings.Contains(strings.Join(got, ""), tok) {
		t.Errorf("leaks %q: want two, naming no secret", got)
	}
}

func TestFakeRunnerTakesScaleSetJIT(t *testing.T) {
	s, _ := newScaleSetServer(t, ActionsOptions{LongPoll: 20 * time.Millisecond, AssignTimeout: time.Hour})
	dir := extract(t, testPackage(t).Path)
	c := connect(t, s, "acme")
	c.createSet("linux")
	c.openSession("h")
	jid, _ := s.QueueJob("acme/api", []string{"linux"}, 100*time.Millisecond)
	r := c.call("POST", c.setPath("/generatejitconfig"), map[string]any{"name": "r1", "workFolder": ""})
	c.get(0, "1") // the capacity that lets the service assign the job
	p := startRunner(t, dir, r.json(t)["encodedJITConfig"].(string))
	if code := p.wait(t); code != 0 {
		t.Fatalf("fake runner exit %d:\n%s", code, p.out.String())
	}
	if j, _ := s.Job(jid); j.Status != StatusCompleted || j.Conclusion != "success" {
		t.Fatalf("job %+v, want completed/success", j)
	}
	var kinds []string
	var last int64
	for {
		r := c.get(last, "1")
		if r.code != 200 {
			break
		}
		for _, e := range events(t, r.json(t)) {
			kinds = append(kinds, e["messageType"].(string))
		}
		last = int64(r.json(t)["messageId"].(float64))
	}
	if want := []string{"JobAssigned", "JobStarted", "JobCompleted"}; !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
}
