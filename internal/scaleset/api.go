package scaleset

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ScaleSet is the part of a RunnerScaleSet the daemon reads and writes (scaleset.md section 2a).
type ScaleSet struct {
	ID              int64
	Name            string
	RunnerGroupID   int64
	RunnerGroupName string
	Labels          []string
	DisableUpdate   bool
}

type wireLabel struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

type wireSet struct {
	ID              int64       `json:"id,omitempty"`
	Name            string      `json:"name"`
	RunnerGroupID   int64       `json:"runnerGroupId"`
	RunnerGroupName string      `json:"runnerGroupName,omitempty"`
	Labels          []wireLabel `json:"labels"`
	RunnerSetting   struct {
		DisableUpdate bool `json:"disableUpdate"`
	} `json:"RunnerSetting"`
}

func (w wireSet) set() ScaleSet {
	s := ScaleSet{ID: w.ID, Name: w.Name, RunnerGroupID: w.RunnerGroupID, RunnerGroupName: w.RunnerGroupName,
		DisableUpdate: w.RunnerSetting.DisableUpdate}
	for _, l := range w.Labels {
		s.Labels = append(s.Labels, l.Name)
	}
	return s
}

func toWire(s ScaleSet) wireSet {
	w := wireSet{Name: s.Name, RunnerGroupID: s.RunnerGroupID}
	for _, l := range s.Labels {
		w.Labels = append(w.Labels, wireLabel{Type: "System", Name: l})
	}
	w.RunnerSetting.DisableUpdate = s.DisableUpdate
	return w
}

type list[T any] struct {
	Count int `json:"count"`
	Value []T `json:"value"`
}

const rss = "_apis/runtime/runnerscalesets"

func setPath(id int64, rest string) string { return rss + "/" + strconv.FormatInt(id, 10) + rest }

// RunnerGroupID resolves a runner group by name; "" and "default" are id 1 without a call.
func (c *Client) RunnerGroupID(ctx context.Context, name string) (int64, error) {
	if name == "" || strings.EqualFold(name, "default") {
		return 1, nil
	}
	var out list[struct {
		ID int64 `json:"id"`
	}]
	op := "look up runner group " + name
	if _, err := c.adminCall(ctx, op, http.MethodGet, "_apis/runtime/runnergroups/", url.Values{"groupName": {name}}, nil, &out); err != nil {
		return 0, err
	}
	if out.Count != 1 || len(out.Value) != 1 {
		return 0, &Error{Op: op, Message: fmt.Sprintf("%d groups have that name in %s; check runner_group", out.Count, c.o.Scope)}
	}
	return out.Value[0].ID, nil
}

// ScaleSetByName finds the set called name in group; ok is false when there is none.
func (c *Client) ScaleSetByName(ctx context.Context, groupID int64, name string) (ScaleSet, bool, error) {
	var out list[wireSet]
	op := "look up scale set " + name
	q := url.Values{"runnerGroupId": {strconv.FormatInt(groupID, 10)}, "name": {name}}
	if _, err := c.adminCall(ctx, op, http.MethodGet, rss, q, nil, &out); err != nil {
		return ScaleSet{}, false, err
	}
	switch len(out.Value) {
	case 0:
		return ScaleSet{}, false, nil
	case 1:
		return out.Value[0].set(), true, nil
	}
	return ScaleSet{}, false, &Error{Op: op, Message: fmt.Sprintf("%d scale sets have that name", len(out.Value))}
}

// CreateScaleSet creates s (the service answers 200 with its id).
func (c *Client) CreateScaleSet(ctx context.Context, s ScaleSet) (ScaleSet, error) {
	var out wireSet
	_, err := c.adminCall(ctx, "create scale set "+s.Name, http.MethodPost, rss, nil, toWire(s), &out)
	return out.set(), err
}

// UpdateScaleSet writes s's name, group, labels and settings to set id.
func (c *Client) UpdateScaleSet(ctx context.Context, id int64, s ScaleSet) (ScaleSet, error) {
	var out wireSet
	_, err := c.adminCall(ctx, "update scale set "+s.Name, http.MethodPatch, setPath(id, ""), nil, toWire(s), &out)
	return out.set(), err
}

// DeleteScaleSet deletes set id; one already gone is not an error.
func (c *Client) DeleteScaleSet(ctx context.Context, id int64) error {
	_, err := c.adminCall(ctx, "delete scale set "+strconv.FormatInt(id, 10), http.MethodDelete, setPath(id, ""), nil, nil, nil)
	if Is(err, ExcSetNotFound) {
		return nil
	}
	return err
}

// Statistics are the service's counts for a set (scaleset.md section 3).
type Statistics struct {
	TotalAvailableJobs     int `json:"totalAvailableJobs"`
	TotalAcquiredJobs      int `json:"totalAcquiredJobs"`
	TotalAssignedJobs      int `json:"totalAssignedJobs"`
	TotalRunningJobs       int `json:"totalRunningJobs"`
	TotalRegisteredRunners int `json:"totalRegisteredRunners"`
	TotalBusyRunners       int `json:"totalBusyRunners"`
	TotalIdleRunners       int `json:"totalIdleRunners"`
}

// Session is an open message session. Its queue token is a secret; Session never prints it.
type Session struct {
	ID         string
	SetID      int64
	Owner      string
	Statistics Statistics

	mu       sync.Mutex
	queueURL *url.URL
	token    string
}

// String names the session without its token.
func (s *Session) String() string { return fmt.Sprintf("session %s of scale set %d", s.ID, s.SetID) }

type wireSession struct {
	SessionID               string     `json:"sessionId"`
	OwnerName               string     `json:"ownerName"`
	MessageQueueURL         string     `json:"messageQueueUrl"`
	MessageQueueAccessToken string     `json:"messageQueueAccessToken"`
	Statistics              Statistics `json:"statistics"`
}

func (c *Client) session(setID int64, w wireSession, op string) (*Session, error) {
	u, err := url.Parse(w.MessageQueueURL)
	if err != nil || u.Host == "" || w.SessionID == "" || w.MessageQueueAccessToken == "" {
		return nil, &Error{Op: op, Message: "the session has no id, message queue or token; try again", Retryable: true}
	}
	if err := c.allowHost(w.MessageQueueURL); err != nil {
		return nil, err
	}
	return &Session{ID: w.SessionID, SetID: setID, Owner: w.OwnerName, Statistics: w.Statistics, queueURL: u,
		token: w.MessageQueueAccessToken}, nil
}

// CreateSession opens the set's message session. A 409 (another session is held) comes back as an
// error that Is(err, ExcSessionConflict).
func (c *Client) CreateSession(ctx context.Context, setID int64, owner string) (*Session, error) {
	var out wireSession
	op := fmt.Sprintf("open a session on scale set %d", setID)
	body := map[string]string{"sessionId": "00000000-0000-0000-0000-000000000000", "ownerName": owner}
	if _, err := c.adminCall(ctx, op, http.MethodPost, setPath(setID, "/sessions"), nil, body, &out); err != nil {
		return nil, err
	}
	return c.session(setID, out, op)
}

// DeleteSession closes a session; one the service no longer knows (400 expired) is not an error.
func (c *Client) DeleteSession(ctx context.Context, setID int64, sessionID string) error {
	op := fmt.Sprintf("close session %s of scale set %d", sessionID, setID)
	_, err := c.adminCall(ctx, op, http.MethodDelete, setPath(setID, "/sessions/"+sessionID), nil, nil, nil)
	if Is(err, ExcSessionExpired) || Is(err, ExcSetNotFound) {
		return nil
	}
	return err
}

// refresh renews s's queue token (PATCH). A refusal means the session is gone: ErrSessionLost.
func (c *Client) refresh(ctx context.Context, s *Session) error {
	var out wireSession
	op := "refresh " + s.String()
	status, err := c.adminCall(ctx, op, http.MethodPatch, setPath(s.SetID, "/sessions/"+s.ID), nil, nil, &out)
	if status == http.StatusNotFound {
		return fmt.Errorf("%w (%v)", ErrSessionLost, err)
	}
	if err != nil {
		return err
	}
	n, err := c.session(s.SetID, out, op)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.queueURL, s.token, s.Statistics = n.queueURL, n.token, n.Statistics
	s.mu.Unlock()
	return nil
}

// JobMessage is one element of a message body (scaleset.md section 3).
type JobMessage struct {
	MessageType     string    `json:"messageType"`
	RunnerRequestID int64     `json:"runnerRequestId"`
	JobID           string    `json:"jobId"`
	RepositoryName  string    `json:"repositoryName"`
	OwnerName       string    `json:"ownerName"`
	JobDisplayName  string    `json:"jobDisplayName"`
	RequestLabels   []string  `json:"requestLabels"`
	QueueTime       time.Time `json:"queueTime"`
	AcquireJobURL   string    `json:"acquireJobUrl"`
	RunnerID        int64     `json:"runnerId"`
	RunnerName      string    `json:"runnerName"`
	Result          string    `json:"result"`
}

// Message is one queue message; its Jobs are decoded from the string body.
type Message struct {
	ID         int64
	Statistics Statistics
	Jobs       []JobMessage
}

// GetMessage long-polls the session's queue. nil, nil means no message (202, or an empty 200,
// which GitHub sometimes sends). A 401 refreshes the queue token and retries once.
func (c *Client) GetMessage(ctx context.Context, s *Session, lastID int64, capacity int) (*Message, error) {
	hdr := http.Header{"Accept": {"application/json; api-version=" + apiVersion},
		"X-Scalesetmaxcapacity": {strconv.Itoa(max(capacity, 0))}}
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		u, tok := *s.queueURL, s.token
		s.mu.Unlock()
		if lastID > 0 {
			q := u.Query()
			q.Set("lastMessageId", strconv.FormatInt(lastID, 10))
			u.RawQuery = q.Encode()
		}
		status, data, err := c.send(ctx, "poll the message queue", http.MethodGet, &u, tok, nil, hdr, c.o.PollTimeout)
		if err != nil {
			return nil, wrapOp("poll the message queue", err)
		}
		switch {
		case status == http.StatusUnauthorized && attempt == 0:
			if err := c.refresh(ctx, s); err != nil {
				return nil, err
			}
			continue
		case status == http.StatusAccepted, status == http.StatusOK && len(data) == 0:
			return nil, nil
		case status != http.StatusOK:
			return nil, newError("poll the message queue", status, data)
		}
		return decodeMessage(data)
	}
}

func decodeMessage(data []byte) (*Message, error) {
	var w struct {
		MessageID   int64      `json:"messageId"`
		MessageType string     `json:"messageType"`
		Statistics  Statistics `json:"statistics"`
		Body        string     `json:"body"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, &Error{Op: "poll the message queue", Message: "the message is not JSON: " + err.Error(), Retryable: true}
	}
	if w.MessageType != "RunnerScaleSetJobMessages" {
		return nil, &Error{Op: "poll the message queue", Message: fmt.Sprintf("unexpected message type %q", w.MessageType)}
	}
	m := &Message{ID: w.MessageID, Statistics: w.Statistics}
	if strings.TrimSpace(w.Body) != "" {
		if err := json.Unmarshal([]byte(w.Body), &m.Jobs); err != nil {
			return nil, &Error{Op: "poll the message queue", Message: "the message body is not a JSON array: " + err.Error()}
		}
	}
	return m, nil
}

// DeleteMessage acknowledges message id; one already gone (404) is acknowledged.
func (c *Client) DeleteMessage(ctx context.Context, s *Session, id int64) error {
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		u, tok := *s.queueURL, s.token
		s.mu.Unlock()
		u.Path = strings.TrimRight(u.Path, "/") + "/" + strconv.FormatInt(id, 10)
		status, data, err := c.send(ctx, "acknowledge a message", http.MethodDelete, &u, tok, nil, nil, c.o.CallTimeout)
		if err != nil {
			return wrapOp("acknowledge a message", err)
		}
		switch {
		case status == http.StatusUnauthorized && attempt == 0:
			if err := c.refresh(ctx, s); err != nil {
				return err
			}
			continue
		case status == http.StatusNoContent, status == http.StatusOK, status == http.StatusNotFound:
			return nil
		}
		return newError("acknowledge a message", status, data)
	}
}

// AcquireJobs acquires the given runner requests with the queue token (GHES flow) and returns
// those the service gave.
func (c *Client) AcquireJobs(ctx context.Context, s *Session, ids []int64) ([]int64, error) {
	_, base, err := c.adminToken(ctx)
	if err != nil {
		return nil, err
	}
	u := base.JoinPath(setPath(s.SetID, "/acquirejobs"))
	u.RawQuery = url.Values{"api-version": {apiVersion}}.Encode()
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		tok := s.token
		s.mu.Unlock()
		status, data, err := c.send(ctx, "acquire jobs", http.MethodPost, u, tok, ids, nil, c.o.CallTimeout)
		if err != nil {
			return nil, wrapOp("acquire jobs", err)
		}
		if status == http.StatusUnauthorized && attempt == 0 {
			if err := c.refresh(ctx, s); err != nil {
				return nil, err
			}
			continue
		}
		if status != http.StatusOK {
			return nil, newError("acquire jobs", status, data)
		}
		var out list[int64]
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, &Error{Op: "acquire jobs", Message: "the answer is not JSON", Retryable: true}
		}
		return out.Value, nil
	}
}

// Runner is a runner as the Actions service reports it; scale-set runners carry no online status.
type Runner struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	ScaleSetID int64  `json:"runnerScaleSetId"`
}

// JIT is a scale-set JIT registration; Encoded is a secret.
type JIT struct {
	Runner  Runner
	Encoded string
}

// String never shows the config.
func (j JIT) String() string {
	return fmt.Sprintf("JIT config for runner %s (id %d)", j.Runner.Name, j.Runner.ID)
}

const agents = "_apis/distributedtask/pools/0/agents"

// GenerateJIT registers runner name in set id. A taken name comes back Is(err, ExcAgentExists).
func (c *Client) GenerateJIT(ctx context.Context, setID int64, name, workFolder string) (JIT, error) {
	var out struct {
		Runner  Runner `json:"runner"`
		Encoded string `json:"encodedJITConfig"`
	}
	op := "register runner " + name
	if _, err := c.adminCall(ctx, op, http.MethodPost, setPath(setID, "/generatejitconfig"), nil,
		map[string]string{"name": name, "workFolder": workFolder}, &out); err != nil {
		return JIT{}, err
	}
	if out.Encoded == "" || out.Runner.ID == 0 {
		return JIT{}, &Error{Op: op, Message: "the answer has no runner id or JIT config; try again", Retryable: true}
	}
	return JIT{Runner: out.Runner, Encoded: out.Encoded}, nil
}

// RunnerByName finds a runner of the scope by name.
func (c *Client) RunnerByName(ctx context.Context, name string) (Runner, bool, error) {
	var out list[Runner]
	if _, err := c.adminCall(ctx, "look up runner "+name, http.MethodGet, agents, url.Values{"agentName": {name}}, nil, &out); err != nil {
		return Runner{}, false, err
	}
	for _, r := range out.Value {
		if strings.EqualFold(r.Name, name) {
			return r, true, nil
		}
	}
	return Runner{}, false, nil
}

// RemoveRunner deregisters runner id: ErrRunnerBusy while it runs a job, nil when already gone.
func (c *Client) RemoveRunner(ctx context.Context, id int64) error {
	_, err := c.adminCall(ctx, "remove runner "+strconv.FormatInt(id, 10), http.MethodDelete, agents+"/"+strconv.FormatInt(id, 10), nil, nil, nil)
	switch {
	case Is(err, ExcJobRunning):
		return ErrRunnerBusy
	case Is(err, ExcAgentNotFound):
		return nil
	}
	return err
}
