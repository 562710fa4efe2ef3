package ghsim

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
)

// The /_ghsim/runner/ API is how the fake runner plays the runner protocol: connect (online),
// acquire (take one matching job), job (was it ended early?), complete, disconnect (offline).

// runnerCall authenticates a fake-runner request by its JIT credential. Callers hold s.mu.
func (s *Server) runnerCall(w http.ResponseWriter, r *http.Request, body any) *runner {
	if err := json.NewDecoder(r.Body).Decode(body); err != nil {
		http.Error(w, "bad runner request", http.StatusBadRequest)
		return nil
	}
	var h runnerproto.Hello
	switch b := body.(type) {
	case *runnerproto.Hello:
		h = *b
	case *runnerproto.JobRequest:
		h = b.Hello
	}
	rn := s.runners[h.RunnerID]
	if rn == nil {
		http.Error(w, "runner not registered", http.StatusNotFound)
		return nil
	}
	if rn.credential != h.Credential {
		http.Error(w, "bad runner credential", http.StatusUnauthorized)
		return nil
	}
	rn.lastSeen = s.now()
	return rn
}

func (s *Server) handleRunnerConnect(w http.ResponseWriter, rn *runner) {
	rn.status = RunnerOnline
	s.registration(rn.id).Online = true
	if f, ok := s.runnerFaults[rn.name]; ok {
		rn.fault = f // a runner's own fault may be set after it registered
	}
	writeJSON(w, http.StatusOK, runnerproto.ConnectResponse{Fault: rn.fault})
}

func (s *Server) handleRunnerDisconnect(w http.ResponseWriter, rn *runner) {
	rn.status = RunnerOffline
	w.WriteHeader(http.StatusNoContent)
}

// handleRunnerAcquire gives an online idle runner the oldest queued job in its scope whose labels
// it satisfies; 204 when there is none.
func (s *Server) handleRunnerAcquire(w http.ResponseWriter, rn *runner) {
	rn.status = RunnerOnline
	if rn.busy {
		http.Error(w, "runner already has a job", http.StatusConflict)
		return
	}
	for _, j := range s.sortedJobs() {
		// A scale-set runner takes what its set was assigned, whatever the labels.
		if j.status != StatusQueued || !s.inScope(rn, j) || !setTakes(rn, j) ||
			(rn.scaleSetID == 0 && !labelsSatisfy(j.labels, rn.labels)) {
			continue
		}
		now := s.now()
		j.status, j.startedAt = StatusInProgress, now
		j.runnerID, j.runnerName, j.groupID, j.groupName = rn.id, rn.name, rn.groupID, rn.groupName
		s.runs[j.runID].updatedAt = now
		rn.busy, rn.jobID = true, j.id
		s.registration(rn.id).JobID = j.id
		s.queueWebhook(j, "in_progress")
		s.setJobStarted(j, rn)
		ms := j.duration.Milliseconds()
		if j.duration < 0 {
			ms = -1 // until FinishJob
		}
		writeJSON(w, http.StatusOK, runnerproto.Assignment{JobID: j.id, JobName: j.name, DurationMS: ms, Fault: j.fault, Command: j.command})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) inScope(rn *runner, j *job) bool {
	return rn.scope == repoScope(j.repo) || ((rn.scope == orgScope(j.repo.owner) || rn.scope == s.enterpriseScopeOf(j.repo.owner)) && s.groups[rn.groupID].takes(j.repo))
}

// runnersJob authenticates a fake runner's call and finds the job it names, which must be the
// runner's own; otherwise it has answered and returns nil. Callers hold s.mu.
func (s *Server) runnersJob(w http.ResponseWriter, r *http.Request, req *runnerproto.JobRequest) *job {
	rn := s.runnerCall(w, r, req)
	if rn == nil {
		return nil
	}
	j := s.jobs[req.JobID]
	if j == nil || j.runnerID != rn.id {
		http.Error(w, "not this runner's job", http.StatusNotFound)
		return nil
	}
	return j
}

// handleRunnerJob tells a busy runner whether FinishJob ended its job early.
func (s *Server) handleRunnerJob(w http.ResponseWriter, j *job, _ runnerproto.JobRequest) {
	writeJSON(w, http.StatusOK, runnerproto.JobStatus{Finish: j.finish || j.status == StatusCompleted, Conclusion: j.finishAs})
}

// handleRunnerComplete records the job's outcome and, the runner being ephemeral, removes it.
func (s *Server) handleRunnerComplete(w http.ResponseWriter, j *job, req runnerproto.JobRequest) {
	if err := checkResult(j, req.Result); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if req.Result != nil && j.status != StatusCompleted {
		r := *req.Result
		j.result = &r
	}
	concl := req.Conclusion
	if !slices.Contains([]string{"success", "failure", "cancelled"}, concl) {
		concl = "success"
	}
	s.completeJob(j, concl)
	w.WriteHeader(http.StatusNoContent)
}

// checkResult refuses a command result for a job that ran no command, and one longer than the
// fake runner may send: a runner that does not bound its output is a bug to see, not to store.
func checkResult(j *job, r *runnerproto.CommandResult) error {
	switch {
	case r == nil:
		return nil
	case j.command == "":
		return errors.New("job " + strconv.FormatInt(j.id, 10) + " is not a command job; it has no result to report")
	case len(r.Stdout) > runnerproto.MaxCommandOutput || len(r.Stderr) > runnerproto.MaxCommandOutput:
		return errors.New("command output is longer than runnerproto.MaxCommandOutput")
	}
	return nil
}

// completeJob concludes j and removes its (ephemeral) runner, as GitHub does. Callers hold s.mu.
func (s *Server) completeJob(j *job, conclusion string) {
	if j.status == StatusCompleted {
		return
	}
	now := s.now()
	if j.startedAt.IsZero() {
		j.startedAt = now
	}
	j.status, j.conclusion, j.completedAt = StatusCompleted, conclusion, now
	s.runs[j.runID].updatedAt = now
	s.setJobCompleted(j, conclusion)
	if rn := s.runners[j.runnerID]; rn != nil {
		s.removeRunner(rn, "ephemeral")
	}
	s.queueWebhook(j, "completed")
}
