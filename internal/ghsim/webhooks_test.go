package ghsim

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

type received struct {
	guid  string
	event *github.WorkflowJobEvent
	raw   []byte
}

// hookReceiver validates every delivery with go-github (signature and event type) and forwards it.
func hookReceiver(t *testing.T, secret string) (string, <-chan received) {
	t.Helper()
	ch := make(chan received, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := github.ValidatePayload(r, []byte(secret))
		if err != nil {
			t.Errorf("delivery failed validation: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		ev, err := github.ParseWebHook(github.WebHookType(r), body)
		if err != nil {
			t.Errorf("parse webhook: %v", err)
			return
		}
		ch <- received{guid: github.DeliveryID(r), event: ev.(*github.WorkflowJobEvent), raw: body}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, ch
}

// playRunner drives the runner protocol in-process: connect, take a job, complete it.
func playRunner(t *testing.T, s *Server, jit string, complete bool) runnerproto.Assignment {
	t.Helper()
	cfg, err := runnerproto.Decode(jit)
	if err != nil {
		t.Fatal(err)
	}
	call := func(op string, body any) *http.Response {
		b, _ := json.Marshal(body)
		resp, err := http.Post(s.URL()+"/_ghsim/runner/"+op, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	hello := runnerproto.Hello{RunnerID: cfg.RunnerID, Credential: cfg.Credential}
	call("connect", hello).Body.Close()
	resp := call("acquire", hello)
	defer resp.Body.Close()
	var a runnerproto.Assignment
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&a) != nil {
		t.Fatalf("acquire: %d", resp.StatusCode)
	}
	if complete {
		call("complete", runnerproto.JobRequest{Hello: hello, JobID: a.JobID, Conclusion: "failure"}).Body.Close()
	}
	return a
}

func next(t *testing.T, ch <-chan received) received {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivery")
		return received{}
	}
}

func TestWorkflowJobWebhooks(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	hookURL, ch := hookReceiver(t, "s3cret")
	s.AddWebhook(hookURL, "s3cret")
	gh := newClient(t, s, s.AddToken(TokenOptions{}))

	jobID, _ := s.QueueJob("acme/api", []string{"linux"}, 0)
	q := next(t, ch)
	if q.event.GetAction() != "queued" || q.event.WorkflowJob.GetID() != jobID || q.event.GetRepo().GetFullName() != "acme/api" ||
		q.event.GetOrg().GetLogin() != "acme" || q.event.WorkflowJob.GetStatus() != "queued" {
		t.Fatalf("queued event = %s", q.raw)
	}
	jit, _, err := gh.Actions.GenerateRepoJITConfig(context.Background(), "acme", "api", jitReq("hooked", "linux"))
	if err != nil {
		t.Fatal(err)
	}
	playRunner(t, s, jit.GetEncodedJITConfig(), true)
	ip, done := next(t, ch), next(t, ch)
	if ip.event.GetAction() != "in_progress" || ip.event.WorkflowJob.GetRunnerName() != "hooked" || ip.event.WorkflowJob.GetRunnerID() != jit.Runner.GetID() {
		t.Fatalf("in_progress event = %s", ip.raw)
	}
	if done.event.GetAction() != "completed" || done.event.WorkflowJob.GetConclusion() != "failure" || done.event.WorkflowJob.CompletedAt == nil {
		t.Fatalf("completed event = %s", done.raw)
	}
	if q.guid == ip.guid || q.guid == "" || len(q.guid) != 36 {
		t.Fatalf("delivery ids %q %q", q.guid, ip.guid)
	}
	// The receiver's answer is recorded just after it forwarded the event.
	livetest.Eventually(t, "the third delivery's status", func() bool { d := s.Deliveries(); return len(d) == 3 && d[2].StatusCode == http.StatusOK })
}

func TestWebhookDropAndDuplicate(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	hookURL, ch := hookReceiver(t, "k")
	s.AddWebhook(hookURL, "k")
	s.AddFault(Fault{Kind: FaultWebhookDrop, Count: 1})
	s.AddFault(Fault{Kind: FaultWebhookDuplicate, Path: "queued", Count: 1})
	dropped, _ := s.QueueJob("acme/api", []string{"linux"}, 0)
	dup, _ := s.QueueJob("acme/api", []string{"linux"}, 0)
	a, b := next(t, ch), next(t, ch)
	if a.guid != b.guid || a.event.WorkflowJob.GetID() != dup || b.event.WorkflowJob.GetID() != dup {
		t.Fatalf("duplicate deliveries: %s / %s", a.guid, b.guid)
	}
	d := s.Deliveries()
	if len(d) != 2 || !d[0].Dropped || d[0].JobID != dropped {
		t.Fatalf("deliveries = %+v", d)
	}
}
