package ghsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
)

// Handlers of the Actions service (scaleset.md section 2). Admin-token handlers run with s.mu held
// (see admin); the queue-token ones lock themselves, since a long poll must not hold the lock.

type apiLabel struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

type apiRunnerSetting struct {
	DisableUpdate bool `json:"disableUpdate"`
	Ephemeral     bool `json:"ephemeral,omitempty"`
}

type apiScaleSet struct {
	ID                 int64            `json:"id"`
	Name               string           `json:"name"`
	RunnerGroupID      int64            `json:"runnerGroupId"`
	RunnerGroupName    string           `json:"runnerGroupName"`
	Labels             []apiLabel       `json:"labels"`
	RunnerSetting      apiRunnerSetting `json:"RunnerSetting"`
	CreatedOn          time.Time        `json:"createdOn"`
	RunnerJitConfigURL string           `json:"runnerJitConfigUrl"`
	Statistics         *Statistics      `json:"statistics"`
}

type apiSession struct {
	SessionID               string      `json:"sessionId"`
	OwnerName               string      `json:"ownerName"`
	RunnerScaleSet          apiScaleSet `json:"runnerScaleSet"`
	MessageQueueURL         string      `json:"messageQueueUrl"`
	MessageQueueAccessToken string      `json:"messageQueueAccessToken"`
	Statistics              Statistics  `json:"statistics"`
}

type apiAgent struct {
	ID               int64  `json:"id"`
	Name             string `json:"name"`
	RunnerScaleSetID int64  `json:"runnerScaleSetId"`
}

func (s *Server) setBase(ss *scaleSet) string {
	return s.ActionsURL() + strings.Replace(tenantPrefix, "{tid}", s.tenantID(ss.sc), 1) + rss + "/" + strconv.FormatInt(ss.id, 10)
}

func (s *Server) apiSet(ss *scaleSet) apiScaleSet {
	st := s.stats(ss)
	out := apiScaleSet{ID: ss.id, Name: ss.name, RunnerGroupID: ss.groupID, RunnerGroupName: ss.groupName,
		Labels: []apiLabel{}, RunnerSetting: apiRunnerSetting{DisableUpdate: ss.disableUpdate},
		CreatedOn: ss.createdOn.UTC(), RunnerJitConfigURL: s.setBase(ss) + "/generatejitconfig", Statistics: &st}
	for _, l := range ss.labels {
		out.Labels = append(out.Labels, apiLabel{Type: "System", Name: l})
	}
	return out
}

func (s *Server) apiSess(sess *ssSession) apiSession {
	ss := sess.set
	q := s.ActionsURL() + strings.Replace(queuePrefix, "{set}", strconv.FormatInt(ss.id, 10), 1) + "?sessionId=" + sess.id
	return apiSession{SessionID: sess.id, OwnerName: sess.owner, RunnerScaleSet: s.apiSet(ss), MessageQueueURL: q,
		MessageQueueAccessToken: sess.token, Statistics: s.stats(ss)}
}

// withSet resolves the path's scale set for fn.
func (s *Server) withSet(fn func(http.ResponseWriter, *http.Request, *scaleSet)) adminHandler {
	return func(w http.ResponseWriter, r *http.Request, sc scope) {
		if ss := s.pathSet(w, r, sc); ss != nil {
			fn(w, r, ss)
		}
	}
}

// pathSet finds the path's scale set within sc, writing 404 RunnerScaleSetNotFoundException otherwise.
func (s *Server) pathSet(w http.ResponseWriter, r *http.Request, sc scope) *scaleSet {
	id, _ := pathID(r, "id")
	ss := s.act.sets[id]
	if ss == nil || ss.sc != sc {
		writeActionsError(w, http.StatusNotFound, excSetNotFound, fmt.Sprintf("The runner scale set %s does not exist.", r.PathValue("id")))
		return nil
	}
	return ss
}

// group finds a runner group of scope sc by id or name (case-insensitive).
func (s *Server) group(sc scope, id int64, name string) *runnerGroup {
	org := groupOwner(sc)
	for _, g := range s.groups {
		if g.org != "" && g.org != org {
			continue
		}
		if (id != 0 && g.id == id) || (id == 0 && strings.EqualFold(g.name, name)) {
			return g
		}
	}
	return nil
}

// handleRunnerGroupByName serves GET _apis/runtime/runnergroups/?groupName=.
func (s *Server) handleRunnerGroupByName(w http.ResponseWriter, r *http.Request, sc scope) {
	type apiGroup struct {
		ID             int64  `json:"id"`
		Name           string `json:"name"`
		Size           int    `json:"size"`
		IsDefaultGroup bool   `json:"isDefaultGroup"`
	}
	var out []apiGroup
	if g := s.group(sc, 0, r.URL.Query().Get("groupName")); g != nil {
		n := 0
		for _, rn := range s.runners {
			if rn.groupID == g.id && rn.scope == sc {
				n++
			}
		}
		out = append(out, apiGroup{ID: g.id, Name: g.name, Size: n, IsDefaultGroup: g.id == 1})
	}
	writeActionsJSON(w, http.StatusOK, listOf(out))
}

// handleScaleSetByName serves GET rss?runnerGroupId=&name=: 0 or 1 set.
func (s *Server) handleScaleSetByName(w http.ResponseWriter, r *http.Request, sc scope) {
	q := r.URL.Query()
	gid, _ := strconv.ParseInt(q.Get("runnerGroupId"), 10, 64)
	var out []apiScaleSet
	for _, ss := range s.sortedSets(sc) {
		if (q.Get("name") == "" || strings.EqualFold(ss.name, q.Get("name"))) && (gid == 0 || ss.groupID == gid) {
			out = append(out, s.apiSet(ss))
		}
	}
	writeActionsJSON(w, http.StatusOK, listOf(out))
}

func (s *Server) handleGetScaleSet(w http.ResponseWriter, _ *http.Request, ss *scaleSet) {
	writeActionsJSON(w, http.StatusOK, s.apiSet(ss))
}

// setFields are the writable fields of a scale set; PATCH merges those present (scaleset.md 2a).
type setFields struct {
	Name          *string        `json:"name"`
	RunnerGroupID *int64         `json:"runnerGroupId"`
	Labels        *[]apiLabel    `json:"labels"`
	RunnerSetting *settingFields `json:"RunnerSetting"`
}

// settingFields is RunnerSetting as a request sends it: a field absent keeps its value, so the
// `"RunnerSetting":{}` GitHub's client sends with every PATCH changes nothing (TestAdminCallShapes, "empty RunnerSetting keeps").
type settingFields struct {
	DisableUpdate *bool `json:"disableUpdate"`
}

// apply checks and merges f into ss; it writes the error and returns false on a bad request.
func (s *Server) apply(w http.ResponseWriter, ss *scaleSet, f setFields) bool {
	name, gid := ss.name, ss.groupID
	if f.Name != nil {
		name = strings.TrimSpace(*f.Name)
	}
	if f.RunnerGroupID != nil {
		gid = *f.RunnerGroupID
	}
	if gid == 0 {
		gid = 1
	}
	if name == "" {
		writeActionsError(w, http.StatusBadRequest, excInvalid, "The scale set name is required.")
		return false
	}
	g := s.group(ss.sc, gid, "")
	if g == nil {
		writeActionsError(w, http.StatusNotFound, excInvalid, fmt.Sprintf("Runner group %d does not exist.", gid))
		return false
	}
	for _, o := range s.sortedSets(ss.sc) {
		if o != ss && o.groupID == gid && strings.EqualFold(o.name, name) {
			writeActionsError(w, http.StatusConflict, excSetExists, fmt.Sprintf("A runner scale set named %s already exists in runner group %s.", name, g.name))
			return false
		}
	}
	ss.name, ss.groupID, ss.groupName = name, g.id, g.name
	if f.Labels != nil {
		ss.labels = s.setLabels(*f.Labels)
	}
	if f.RunnerSetting != nil && f.RunnerSetting.DisableUpdate != nil {
		ss.disableUpdate = *f.RunnerSetting.DisableUpdate
	}
	return true
}

// readActionsBody decodes r's JSON body into v, or answers 400 (an ArgumentException) with msg
// when the body is not JSON or required (a field of v, nil: none) is blank; false: answered.
func readActionsBody(w http.ResponseWriter, r *http.Request, v any, required *string, msg string) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil || (required != nil && strings.TrimSpace(*required) == "") {
		writeActionsError(w, http.StatusBadRequest, excInvalid, msg)
		return false
	}
	return true
}

// handleCreateScaleSet serves POST rss: 200 with the set (not 201).
func (s *Server) handleCreateScaleSet(w http.ResponseWriter, r *http.Request, sc scope) {
	var f setFields
	if !readActionsBody(w, r, &f, nil, "The request body is not valid JSON.") {
		return
	}
	ss := &scaleSet{id: s.newID(), sc: sc, createdOn: s.now(), lastMsg: firstMessageID, notify: make(chan struct{})}
	if !s.apply(w, ss, f) {
		return
	}
	s.act.sets[ss.id] = ss
	for _, j := range s.sortedJobs() {
		s.routeJob(j)
	}
	writeActionsJSON(w, http.StatusOK, s.apiSet(ss))
}

func (s *Server) handleUpdateScaleSet(w http.ResponseWriter, r *http.Request, ss *scaleSet) {
	var f setFields
	if !readActionsBody(w, r, &f, nil, "The request body is not valid JSON.") {
		return
	}
	if s.apply(w, ss, f) {
		writeActionsJSON(w, http.StatusOK, s.apiSet(ss))
	}
}

// handleDeleteScaleSet serves DELETE rss/{id}: 204. Its session and queue go with it; jobs not yet
// running wait for a set of the same name.
func (s *Server) handleDeleteScaleSet(w http.ResponseWriter, r *http.Request, ss *scaleSet) {
	for _, j := range s.setJobs(ss) {
		if j.set.state != "running" && j.set.state != "completed" {
			j.set = nil
		}
	}
	delete(s.act.sets, ss.id)
	ss.session = nil
	ss.wake()
	w.WriteHeader(http.StatusNoContent)
}

// handleCreateSession serves POST rss/{id}/sessions: 200, or 409 while another session is in hands.
func (s *Server) handleCreateSession(w http.ResponseWriter, r *http.Request, ss *scaleSet) {
	var body struct {
		SessionID string `json:"sessionId"`
		OwnerName string `json:"ownerName"`
	}
	if !readActionsBody(w, r, &body, &body.OwnerName, "ownerName is required.") {
		return
	}
	if ss.session != nil && !s.stale(ss.session) {
		ss.conflicts++
		writeActionsError(w, http.StatusConflict, excSessionConflict,
			fmt.Sprintf("The actions runner scaleset %s already has an active session for owner %s.", ss.name, ss.session.owner))
		return
	}
	now := s.now()
	ss.opened++
	ss.session = &ssSession{id: newGUID(), owner: body.OwnerName, set: ss, token: newSecret("ghsimq_"),
		tokenExp: now.Add(s.opts.Actions.QueueTokenTTL), lastSeen: now}
	ss.wake() // a poll of the replaced session ends
	writeActionsJSON(w, http.StatusOK, s.apiSess(ss.session))
}

// handleRefreshSession serves PATCH rss/{id}/sessions/{sid}: a new queue token.
func (s *Server) handleRefreshSession(w http.ResponseWriter, r *http.Request, ss *scaleSet) {
	sess := ss.session
	if sess == nil || sess.id != r.PathValue("sid") {
		writeActionsError(w, http.StatusNotFound, excAdmin, "The session "+r.PathValue("sid")+" was not found.")
		return
	}
	now := s.now()
	sess.token, sess.tokenExp, sess.lastSeen = newSecret("ghsimq_"), now.Add(s.opts.Actions.QueueTokenTTL), now
	writeActionsJSON(w, http.StatusOK, s.apiSess(sess))
}

// handleDeleteSession serves DELETE rss/{id}/sessions/{sid}: 204, or 400
// RunnerScaleSetSessionExpiredException for a session that is not the set's.
func (s *Server) handleDeleteSession(w http.ResponseWriter, r *http.Request, ss *scaleSet) {
	if ss.session == nil || ss.session.id != r.PathValue("sid") {
		writeActionsError(w, http.StatusBadRequest, excSessionExpired, "The session "+r.PathValue("sid")+" has expired or does not exist.")
		return
	}
	ss.session = nil
	ss.wake()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleAcquirableJobs(w http.ResponseWriter, r *http.Request, ss *scaleSet) {
	type acquirable struct {
		AcquireJobURL   string   `json:"acquireJobUrl"`
		RunnerRequestID int64    `json:"runnerRequestId"`
		RequestLabels   []string `json:"requestLabels"`
	}
	var out []acquirable
	for _, j := range s.setJobs(ss) {
		if j.set.state == "available" {
			out = append(out, acquirable{s.setBase(ss) + "/acquirejobs", j.set.requestID, slices.Clone(j.labels)})
		}
	}
	if len(out) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeActionsJSON(w, http.StatusOK, listOf(out))
}

// handleScaleSetJIT serves POST rss/{id}/generatejitconfig: 200, 409 AgentExistsException on a
// name taken in the scope.
func (s *Server) handleScaleSetJIT(w http.ResponseWriter, r *http.Request, ss *scaleSet) {
	var body struct {
		Name       string `json:"name"`
		WorkFolder string `json:"workFolder"`
	}
	if !readActionsBody(w, r, &body, &body.Name, "The runner name is required.") {
		return
	}
	sc := ss.sc
	for _, o := range s.runners {
		if o.scope == sc && strings.EqualFold(o.name, body.Name) {
			writeActionsError(w, http.StatusConflict, excAgentExists, "A runner named "+body.Name+" already exists.")
			return
		}
	}
	rn := &runner{id: s.newID(), name: body.Name, scope: sc, labels: slices.Clone(ss.labels), groupID: ss.groupID,
		groupName: ss.groupName, credential: newSecret("ghsimrunner_"), status: RunnerOffline, createdAt: s.now(),
		scaleSetID: ss.id, fault: s.registeredFault(body.Name)}
	enc, err := runnerproto.JITConfig{URL: s.URL(), RunnerID: rn.id, RunnerName: rn.name, Credential: rn.credential,
		Labels: rn.labels, WorkFolder: body.WorkFolder, ScaleSetID: ss.id, Fault: jitFault(rn.fault)}.Encode()
	if err != nil {
		writeActionsError(w, http.StatusInternalServerError, "", "Internal Server Error")
		return
	}
	s.runners[rn.id] = rn
	s.registrations = append(s.registrations, &Registration{RunnerID: rn.id, Name: rn.name, Scope: sc.display(),
		Labels: slices.Clone(rn.labels), RegisteredAt: rn.createdAt, ScaleSetID: ss.id})
	writeActionsJSON(w, http.StatusOK, map[string]any{"runner": apiAgent{rn.id, rn.name, ss.id}, "encodedJITConfig": enc})
}

func (s *Server) pathAgent(w http.ResponseWriter, r *http.Request, sc scope) *runner {
	id, _ := pathID(r, "id")
	rn := s.runners[id]
	if rn == nil || rn.scope != sc {
		writeActionsError(w, http.StatusNotFound, excAgentNotFound, fmt.Sprintf("Runner %s was not found.", r.PathValue("id")))
		return nil
	}
	return rn
}

func (s *Server) handleGetAgent(w http.ResponseWriter, r *http.Request, sc scope) {
	if rn := s.pathAgent(w, r, sc); rn != nil {
		writeActionsJSON(w, http.StatusOK, apiAgent{rn.id, rn.name, rn.scaleSetID})
	}
}

func (s *Server) handleAgentByName(w http.ResponseWriter, r *http.Request, sc scope) {
	var out []apiAgent
	for _, rn := range s.sortedRunners(sc) {
		if strings.EqualFold(rn.name, r.URL.Query().Get("agentName")) {
			out = append(out, apiAgent{rn.id, rn.name, rn.scaleSetID})
		}
	}
	writeActionsJSON(w, http.StatusOK, listOf(out))
}

// handleDeleteAgent serves DELETE agents/{id}: 204, 400 JobStillRunningException while busy.
func (s *Server) handleDeleteAgent(w http.ResponseWriter, r *http.Request, sc scope) {
	rn := s.pathAgent(w, r, sc)
	if rn == nil {
		return
	}
	if rn.busy {
		writeActionsError(w, http.StatusBadRequest, excJobRunning, "Runner "+rn.name+" is still running a job.")
		return
	}
	s.removeRunner(rn, "delete")
	w.WriteHeader(http.StatusNoContent)
}

// handleAcquireJobs serves POST rss/{id}/acquirejobs with the queue token (scaleset.md section 2b).
func (s *Server) handleAcquireJobs(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("api-version") == "" {
		writeActionsError(w, http.StatusBadRequest, excInvalid, "The api-version query parameter is required.")
		return
	}
	var ids []int64
	if !readActionsBody(w, r, &ids, nil, "The body must be a JSON array of runnerRequestIds.") {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.queueCall(w, r)
	if sess == nil {
		return
	}
	got := []int64{}
	for _, j := range s.setJobs(sess.set) {
		if j.set.state == "available" && slices.Contains(ids, j.set.requestID) {
			j.set.state = "acquired"
			got = append(got, j.set.requestID)
		}
	}
	s.assign(sess.set)
	writeActionsJSON(w, http.StatusOK, listOf(got))
}

// handleGetMessage serves the long poll: 200 with a message, 202 after LongPoll without one, 401
// for an expired queue token, 400 text/plain for a missing X-ScaleSetMaxCapacity.
func (s *Server) handleGetMessage(w http.ResponseWriter, r *http.Request) {
	capacity, err := strconv.Atoi(r.Header.Get("X-ScaleSetMaxCapacity"))
	if err != nil || capacity < 0 {
		writeActionsError(w, http.StatusBadRequest, "", "X-ScaleSetMaxCapacity must be a non-negative integer.")
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "api-version=") {
		writeActionsError(w, http.StatusBadRequest, "", "Accept must name an api-version.")
		return
	}
	last, _ := strconv.ParseInt(r.URL.Query().Get("lastMessageId"), 10, 64)
	timer := time.NewTimer(s.opts.Actions.LongPoll)
	defer timer.Stop()
	s.mu.Lock()
	sess := s.queueCall(w, r)
	if sess == nil {
		s.mu.Unlock()
		return
	}
	sess.polling++
	defer func() {
		s.mu.Lock()
		sess.polling--
		sess.lastSeen = s.now()
		s.mu.Unlock()
	}()
	for {
		ss := sess.set
		if ss.session != sess || s.act.sets[ss.id] != ss {
			s.mu.Unlock()
			writeActionsError(w, http.StatusUnauthorized, "", "Unauthorized")
			return
		}
		sess.capacity, sess.capSet, sess.lastSeen = capacity, true, s.now()
		s.sweepScaleSets()
		s.assign(ss)
		if m := ss.nextMessage(last); m != nil {
			out := s.apiMessage(ss, m)
			s.mu.Unlock()
			writeActionsJSON(w, http.StatusOK, out)
			return
		}
		ch := ss.notify
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			w.WriteHeader(http.StatusAccepted)
			return
		case <-r.Context().Done():
			return
		case <-s.act.done:
			w.WriteHeader(http.StatusAccepted)
			return
		}
		s.mu.Lock()
	}
}

// handleDeleteMessage acknowledges a message: 204; 404 for one not in the queue.
func (s *Server) handleDeleteMessage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.queueCall(w, r)
	if sess == nil {
		return
	}
	id, _ := pathID(r, "msg")
	ss := sess.set
	for i, m := range ss.msgs {
		if m.id == id {
			ss.msgs = slices.Delete(ss.msgs, i, i+1)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeActionsError(w, http.StatusNotFound, "", "Message not found.")
}
