package ghsim

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

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
