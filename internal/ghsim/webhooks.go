package ghsim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-github/v62/github"
)

type hook struct {
	id     int64
	url    string
	secret string
}

// Delivery records one webhook delivery attempt, for assertions.
type Delivery struct {
	GUID       string `json:"guid"` // X-GitHub-Delivery
	HookID     int64  `json:"hook_id"`
	Event      string `json:"event"`  // "workflow_job"
	Action     string `json:"action"` // queued, in_progress, completed
	JobID      int64  `json:"job_id"`
	StatusCode int    `json:"status_code"` // the receiver's answer; 0 if not sent
	Dropped    bool   `json:"dropped"`     // a webhook-drop fault ate it
	Err        string `json:"error"`       // transport error, if any
}

type delivery struct {
	index  int // into s.deliveries
	hookID int64
	url    string
	secret string
	body   []byte
	guid   string
	copies int
}

// AddWebhook subscribes url to workflow_job events of every repository; secret signs the body
// (X-Hub-Signature-256). It returns the hook id.
func (s *Server) AddWebhook(url, secret string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &hook{id: s.newID(), url: url, secret: secret}
	s.hooks = append(s.hooks, h)
	return h.id
}

// Deliveries returns every delivery so far, oldest first.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.deliveries...)
}

// hookJob is workflow_job as webhooks carry it: unlike go-github's struct (omitempty), absent
// values are explicit nulls, as in GitHub's published payloads.
type hookJob struct {
	ID              int64    `json:"id"`
	RunID           int64    `json:"run_id"`
	WorkflowName    string   `json:"workflow_name"`
	HeadBranch      string   `json:"head_branch"`
	RunURL          string   `json:"run_url"`
	RunAttempt      int      `json:"run_attempt"`
	NodeID          string   `json:"node_id"`
	HeadSHA         string   `json:"head_sha"`
	URL             string   `json:"url"`
	HTMLURL         string   `json:"html_url"`
	Status          string   `json:"status"`
	Conclusion      *string  `json:"conclusion"`
	CreatedAt       string   `json:"created_at"`
	StartedAt       string   `json:"started_at"`
	CompletedAt     *string  `json:"completed_at"`
	Name            string   `json:"name"`
	Steps           []any    `json:"steps"`
	CheckRunURL     string   `json:"check_run_url"`
	Labels          []string `json:"labels"`
	RunnerID        *int64   `json:"runner_id"`
	RunnerName      *string  `json:"runner_name"`
	RunnerGroupID   *int64   `json:"runner_group_id"`
	RunnerGroupName *string  `json:"runner_group_name"`
}

type hookPayload struct {
	Action       string               `json:"action"`
	WorkflowJob  hookJob              `json:"workflow_job"`
	Repository   *github.Repository   `json:"repository"`
	Organization *github.Organization `json:"organization,omitempty"`
	Enterprise   *hookEnterprise      `json:"enterprise,omitempty"` // the owner's enterprise, if any
	Installation *github.Installation `json:"installation,omitempty"`
	Sender       *github.User         `json:"sender"`
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// payload renders the workflow_job event for j. Callers hold s.mu.
func (s *Server) payload(j *job, action string) hookPayload {
	api := s.apiJob(j)
	started := j.startedAt
	if started.IsZero() {
		started = j.createdAt // GitHub fills started_at even for a queued job
	}
	hj := hookJob{ID: j.id, RunID: j.runID, WorkflowName: j.workflowName, HeadBranch: "main", RunURL: api.GetRunURL(),
		RunAttempt: 1, NodeID: api.GetNodeID(), HeadSHA: j.headSHA, URL: api.GetURL(), HTMLURL: api.GetHTMLURL(),
		Status: j.status, Conclusion: strOrNil(j.conclusion), CreatedAt: rfc3339(j.createdAt), StartedAt: rfc3339(started),
		Name: j.name, Steps: []any{}, CheckRunURL: api.GetCheckRunURL(), Labels: append([]string{}, j.labels...),
		RunnerID: idOrNil(j.runnerID), RunnerName: strOrNil(j.runnerName), RunnerGroupID: idOrNil(j.groupID),
		RunnerGroupName: strOrNil(j.groupName)}
	if !j.completedAt.IsZero() {
		c := rfc3339(j.completedAt)
		hj.CompletedAt = &c
	}
	p := hookPayload{Action: action, WorkflowJob: hj, Repository: s.apiRepo(j.repo), Sender: s.apiAccount(j.repo.owner)}
	if o := j.repo.owner; o.isOrg {
		p.Organization = &github.Organization{Login: github.String(o.login), ID: github.Int64(o.id),
			NodeID: github.String(fmt.Sprintf("O_sim%d", o.id)), URL: github.String(s.APIURL() + "/orgs/" + o.login)}
	}
	p.Enterprise = s.hookEnterpriseOf(j.repo.owner)
	for _, inst := range s.installations {
		if inst.account == j.repo.owner {
			p.Installation = &github.Installation{ID: github.Int64(inst.id), NodeID: github.String(fmt.Sprintf("I_sim%d", inst.id))}
			break
		}
	}
	return p
}

func newGUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Sign returns the X-Hub-Signature-256 value for body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// queueWebhook enqueues j's event for every hook, applying webhook faults. Callers hold s.mu.
func (s *Server) queueWebhook(j *job, action string) {
	if len(s.hooks) == 0 {
		return
	}
	body, err := json.Marshal(s.payload(j, action))
	if err != nil {
		s.log.Error("ghsim: encode webhook payload", "err", err)
		return
	}
	for _, h := range s.hooks {
		d := Delivery{GUID: newGUID(), HookID: h.id, Event: "workflow_job", Action: action, JobID: j.id}
		copies := 1
		if f, ok := s.pickFault(http.MethodPost, action, true); ok {
			if f.Kind == FaultWebhookDrop {
				copies, d.Dropped = 0, true
			} else {
				copies = 2
			}
		}
		s.deliveries = append(s.deliveries, d)
		if copies == 0 {
			continue
		}
		select {
		case s.delivery <- delivery{index: len(s.deliveries) - 1, hookID: h.id, url: h.url, secret: h.secret, body: body, guid: d.GUID, copies: copies}:
		default:
			s.deliveries[len(s.deliveries)-1].Err = "delivery queue full"
		}
	}
}

// deliverLoop posts queued deliveries, in order, until ctx ends.
func (s *Server) deliverLoop(ctx context.Context) {
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-s.delivery:
			for range d.copies {
				code, err := post(ctx, client, d)
				s.mu.Lock()
				s.deliveries[d.index].StatusCode = code
				if err != nil {
					s.deliveries[d.index].Err = err.Error()
				}
				s.mu.Unlock()
			}
		}
	}
}

func post(ctx context.Context, client *http.Client, d delivery) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(d.body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/ghsim")
	req.Header.Set("X-GitHub-Event", "workflow_job")
	req.Header.Set("X-GitHub-Delivery", d.guid)
	req.Header.Set("X-GitHub-Hook-ID", fmt.Sprint(d.hookID))
	req.Header.Set("X-Hub-Signature-256", Sign(d.secret, d.body))
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
