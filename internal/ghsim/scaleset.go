package ghsim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scale sets, their sessions and their job lifecycle (scaleset.md sections 2a and 3). A job whose
// only runs-on label names a scale set of its repository (or of its organization) is routed to that
// set: github.com assigns it as soon as the listener's X-ScaleSetMaxCapacity allows (JobAssigned);
// GHES announces it (JobAvailable) and assigns it only once acquired. A scale-set runner takes an
// assigned job of its set (JobStarted) and reports it (JobCompleted). Classic runners never see such
// a job.

type scaleSet struct {
	id            int64
	sc            scope
	name          string
	groupID       int64
	groupName     string
	labels        []string
	disableUpdate bool
	createdOn     time.Time
	lastMsg       int64           // last message id issued; starts afresh for a re-created set
	msgs          []*queueMessage // delivered or not, until acknowledged (DELETE)
	pending       []jobMessage    // events not yet put into a message
	session       *ssSession
	notify        chan struct{} // closed and replaced on every change a long poll waits for
	opened        int           // sessions created on the set
	conflicts     int           // session creates refused with 409
}

type ssSession struct {
	id       string
	owner    string
	set      *scaleSet
	token    string
	tokenExp time.Time
	lastSeen time.Time
	polling  int // message GETs in flight: a polled session is never stale
	capacity int
	capSet   bool // a GET has said its capacity
}

type queueMessage struct {
	id     int64
	events []jobMessage
}

// setJob is a job's scale-set side. state: queued (routed, waiting for capacity), available (GHES:
// announced, waiting for acquire), acquired, assigned, running, completed.
type setJob struct {
	setID      int64
	requestID  int64
	jobID      string // the Actions service's own job id, not the REST one (garm#590)
	state      string
	assignedAt time.Time
	setAssign  time.Time
	runAssign  time.Time
	requeues   int
}

// jobMessage is one element of a message body (scaleset.md section 3, "Job messages").
type jobMessage struct {
	MessageType        string    `json:"messageType"`
	RunnerRequestID    int64     `json:"runnerRequestId"`
	JobID              string    `json:"jobId"`
	RepositoryName     string    `json:"repositoryName"`
	OwnerName          string    `json:"ownerName"`
	JobWorkflowRef     string    `json:"jobWorkflowRef"`
	JobDisplayName     string    `json:"jobDisplayName"`
	WorkflowRunID      int64     `json:"workflowRunId"`
	EventName          string    `json:"eventName"`
	RequestLabels      []string  `json:"requestLabels"`
	QueueTime          time.Time `json:"queueTime"`
	ScaleSetAssignTime time.Time `json:"scaleSetAssignTime"`
	RunnerAssignTime   time.Time `json:"runnerAssignTime"`
	FinishTime         time.Time `json:"finishTime"`
	AcquireJobURL      string    `json:"acquireJobUrl,omitempty"`
	RunnerID           int64     `json:"runnerId,omitempty"`
	RunnerName         string    `json:"runnerName,omitempty"`
	Result             string    `json:"result,omitempty"`
}

// Statistics is the statistics object of sessions and messages (scaleset.md section 3).
type Statistics struct {
	TotalAvailableJobs     int `json:"totalAvailableJobs"`
	TotalAcquiredJobs      int `json:"totalAcquiredJobs"`
	TotalAssignedJobs      int `json:"totalAssignedJobs"`
	TotalRunningJobs       int `json:"totalRunningJobs"`
	TotalRegisteredRunners int `json:"totalRegisteredRunners"`
	TotalBusyRunners       int `json:"totalBusyRunners"`
	TotalIdleRunners       int `json:"totalIdleRunners"`
}

// maxJobMessages bounds a message body; GitHub truncates larger backlogs, and so does the
// simulator: events past the 50th are dropped, and only statistics tell of them (docs/simulator.md).
const maxJobMessages = 50

// firstMessageID is where a set's message ids start: large, as GitHub's are (ARC#3204).
const firstMessageID = 100_000_000

func (ss *scaleSet) wake() {
	close(ss.notify)
	ss.notify = make(chan struct{})
}

// emit queues a job event for the set's next message. Callers hold s.mu.
func (s *Server) emit(ss *scaleSet, j *job, kind string, edit func(*jobMessage)) {
	m := jobMessage{MessageType: kind, RunnerRequestID: j.set.requestID, JobID: j.set.jobID,
		RepositoryName: j.repo.name, OwnerName: j.repo.owner.login,
		JobWorkflowRef: j.repo.fullName() + "/.github/workflows/ci.yml@refs/heads/main", JobDisplayName: j.name,
		WorkflowRunID: j.runID, EventName: "push", RequestLabels: slices.Clone(j.labels), QueueTime: j.createdAt.UTC(),
		ScaleSetAssignTime: j.set.setAssign.UTC(), RunnerAssignTime: j.set.runAssign.UTC()}
	if edit != nil {
		edit(&m)
	}
	ss.pending = append(ss.pending, m)
	ss.wake()
}

// routeJob sends a newly queued job to the first scale set (of its repository, else of its
// organization) that carries every label the job asks for (setServes), if there is one.
// Callers hold s.mu.
func (s *Server) routeJob(j *job) {
	if j.set != nil || len(j.labels) == 0 || j.status != StatusQueued {
		return
	}
	var ss *scaleSet
	for _, sc := range []scope{repoScope(j.repo), orgScope(j.repo.owner), s.enterpriseScopeOf(j.repo.owner)} {
		for _, c := range s.sortedSets(sc) {
			if ss == nil && setServes(c, j.labels) {
				ss = c
			}
		}
	}
	if ss == nil {
		return
	}
	s.act.nextRQ++
	j.set = &setJob{setID: ss.id, requestID: s.act.nextRQ, jobID: newGUID(), state: "queued"}
	s.offer(ss, j)
}

// offer makes a routed job wait for assignment: announced first on GHES. Callers hold s.mu.
func (s *Server) offer(ss *scaleSet, j *job) {
	j.set.state = "queued"
	if s.opts.Actions.GHES {
		j.set.state = "available"
		url := s.ActionsURL() + strings.Replace(tenantPrefix, "{tid}", s.tenantID(ss.sc), 1) + rss + "/" +
			strconv.FormatInt(ss.id, 10) + "/acquirejobs"
		s.emit(ss, j, "JobAvailable", func(m *jobMessage) { m.AcquireJobURL = url })
	}
	s.assign(ss)
}

// assign gives the set's waiting jobs to it while its listener's capacity allows. Callers hold s.mu.
func (s *Server) assign(ss *scaleSet) {
	sess := ss.session
	if sess == nil || !sess.capSet {
		return
	}
	waiting := "queued"
	if s.opts.Actions.GHES {
		waiting = "acquired"
	}
	held := 0
	var cand []*job
	for _, j := range s.setJobs(ss) {
		switch j.set.state {
		case "assigned", "running":
			held++
		case waiting:
			cand = append(cand, j)
		}
	}
	now := s.now()
	for _, j := range cand {
		if held >= sess.capacity {
			return
		}
		held++
		j.set.state, j.set.assignedAt, j.set.setAssign = "assigned", now, now
		s.emit(ss, j, "JobAssigned", nil)
	}
}

// setJobs returns the jobs routed to ss, oldest first. Callers hold s.mu.
func (s *Server) setJobs(ss *scaleSet) []*job {
	var out []*job
	for _, j := range s.sortedJobs() {
		if j.set != nil && j.set.setID == ss.id {
			out = append(out, j)
		}
	}
	return out
}

// sweepScaleSets cancels and requeues assigned jobs no runner took within AssignTimeout; after the
// third requeue the job is cancelled for good (scaleset.md section 3, "Reassignment"). Callers hold s.mu.
func (s *Server) sweepScaleSets() {
	now := s.now()
	for _, ss := range s.act.sets {
		for _, j := range s.setJobs(ss) {
			if j.set.state != "assigned" || now.Sub(j.set.assignedAt) < s.opts.Actions.AssignTimeout {
				continue
			}
			s.emit(ss, j, "JobCompleted", func(m *jobMessage) { m.Result, m.FinishTime = "canceled", now.UTC() })
			j.set.requeues++
			j.set.setAssign = time.Time{}
			if j.set.requeues > 3 {
				j.set.state = "completed"
				s.completeJob(j, "cancelled")
				continue
			}
			s.offer(ss, j)
		}
	}
}

// setTakes reports whether runner rn may take job j: a scale-set runner takes only jobs assigned to
// its set, a classic runner never a scale-set job. Callers hold s.mu.
func setTakes(rn *runner, j *job) bool {
	if rn.scaleSetID == 0 || j.set == nil {
		return rn.scaleSetID == 0 && j.set == nil
	}
	return j.set.setID == rn.scaleSetID && j.set.state == "assigned"
}

// setJobStarted records that a scale-set runner took j. Callers hold s.mu.
func (s *Server) setJobStarted(j *job, rn *runner) {
	ss := s.act.sets[rn.scaleSetID]
	if j.set == nil || ss == nil {
		return
	}
	j.set.state, j.set.runAssign = "running", s.now()
	s.emit(ss, j, "JobStarted", func(m *jobMessage) { m.RunnerID, m.RunnerName = rn.id, rn.name })
}

// setJobCompleted reports a finished job to its set. Callers hold s.mu.
func (s *Server) setJobCompleted(j *job, conclusion string) {
	if j.set == nil || j.set.state == "completed" {
		return
	}
	j.set.state = "completed"
	ss := s.act.sets[j.set.setID]
	if ss == nil {
		return
	}
	result := map[string]string{"success": "succeeded", "failure": "failed", "cancelled": "canceled"}[conclusion]
	s.emit(ss, j, "JobCompleted", func(m *jobMessage) {
		m.Result, m.FinishTime, m.RunnerID, m.RunnerName = result, s.now().UTC(), j.runnerID, j.runnerName
	})
	s.assign(ss)
}

// stats computes a set's statistics now. Callers hold s.mu.
func (s *Server) stats(ss *scaleSet) Statistics {
	var st Statistics
	for _, j := range s.setJobs(ss) {
		switch j.set.state {
		case "queued", "available":
			st.TotalAvailableJobs++
		case "acquired":
			st.TotalAcquiredJobs++
		case "assigned":
			st.TotalAssignedJobs++
		case "running":
			st.TotalAssignedJobs++
			st.TotalRunningJobs++
		}
	}
	for _, rn := range s.runners {
		if rn.scaleSetID == ss.id {
			st.TotalRegisteredRunners++
			if rn.busy {
				st.TotalBusyRunners++
			}
		}
	}
	st.TotalIdleRunners = st.TotalRegisteredRunners - st.TotalBusyRunners
	return st
}

// stale reports whether a session is in nobody's hands any more. Callers hold s.mu.
func (s *Server) stale(sess *ssSession) bool {
	return sess.polling == 0 && s.now().Sub(sess.lastSeen) >= s.opts.Actions.SessionExpiry
}

// nextMessage returns the first unacknowledged message after last, packing pending events into a
// new one when there is none. Callers hold s.mu.
func (ss *scaleSet) nextMessage(last int64) *queueMessage {
	for _, m := range ss.msgs {
		if m.id > last {
			return m
		}
	}
	if len(ss.pending) == 0 {
		return nil
	}
	ev := ss.pending
	if len(ev) > maxJobMessages {
		ev = ev[:maxJobMessages]
	}
	ss.pending = nil
	ss.lastMsg++
	m := &queueMessage{id: ss.lastMsg, events: ev}
	ss.msgs = append(ss.msgs, m)
	return m
}

// apiMessage renders a queue message; body is a string holding the JSON array (scaleset.md section 3).
func (s *Server) apiMessage(ss *scaleSet, m *queueMessage) map[string]any {
	body, _ := json.Marshal(m.events)
	return map[string]any{"messageId": m.id, "messageType": "RunnerScaleSetJobMessages",
		"statistics": s.stats(ss), "body": string(body)}
}

// queueSession finds the session a queue token belongs to, expired or not. Callers hold s.mu.
func (s *Server) queueSession(tok string) *ssSession {
	if tok == "" {
		return nil
	}
	for _, ss := range s.act.sets {
		if ss.session != nil && ss.session.token == tok {
			return ss.session
		}
	}
	return nil
}

// queueCall authenticates a queue-token call for the path's set: 401 when the token is unknown,
// expired or another session's. Callers hold s.mu.
func (s *Server) queueCall(w http.ResponseWriter, r *http.Request) *ssSession {
	sess := s.queueSession(bearer(r))
	id, _ := pathID(r, "set")
	if r.PathValue("set") == "" {
		id, _ = pathID(r, "id")
	}
	if sess == nil || sess.set.id != id || !s.now().Before(sess.tokenExp) ||
		(r.URL.Query().Has("sessionId") && r.URL.Query().Get("sessionId") != sess.id) {
		writeActionsError(w, http.StatusUnauthorized, "", "Unauthorized")
		return nil
	}
	return sess
}

// ScaleSet is a snapshot of a scale set, for assertions and the admin API.
type ScaleSet struct {
	ID      int64    `json:"id"`
	Name    string   `json:"name"`
	Scope   string   `json:"scope"` // "owner/name" or "org"
	GroupID int64    `json:"group_id"`
	Labels  []string `json:"labels"`
	Session string   `json:"session,omitempty"` // the session id, "" if none
	Owner   string   `json:"owner,omitempty"`   // the session's ownerName
	Polling bool     `json:"polling"`           // a message GET is in flight
	Unacked int      `json:"unacked"`           // messages delivered or packed, not yet acknowledged
	// Opened counts the sessions created on the set, Conflicts the creates refused with 409
	// while another session was held (a set never has more than one session).
	Opened     int        `json:"sessions_opened"`
	Conflicts  int        `json:"session_conflicts"`
	Statistics Statistics `json:"statistics"`
}

// ScaleSets returns every scale set, by id.
func (s *Server) ScaleSets() []ScaleSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ScaleSet
	for _, ss := range byID(s.act.sets, nil) {
		v := ScaleSet{ID: ss.id, Name: ss.name, Scope: ss.sc.display(), GroupID: ss.groupID,
			Labels: slices.Clone(ss.labels), Unacked: len(ss.msgs), Opened: ss.opened, Conflicts: ss.conflicts, Statistics: s.stats(ss)}
		if ss.session != nil {
			v.Session, v.Owner, v.Polling = ss.session.id, ss.session.owner, ss.session.polling > 0
		}
		out = append(out, v)
	}
	return out
}
