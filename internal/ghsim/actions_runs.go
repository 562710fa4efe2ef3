package ghsim

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/go-github/v62/github"
)

func ts(t time.Time) *github.Timestamp {
	if t.IsZero() {
		return nil
	}
	return &github.Timestamp{Time: t.UTC().Truncate(time.Second)}
}

func strOrNil(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

func idOrNil(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

// apiJob renders j as GitHub's REST API does (go-github's WorkflowJob). Callers hold s.mu.
func (s *Server) apiJob(j *job) *github.WorkflowJob {
	base := s.APIURL() + "/repos/" + j.repo.fullName()
	return &github.WorkflowJob{
		ID: github.Int64(j.id), RunID: github.Int64(j.runID), RunURL: github.String(fmt.Sprintf("%s/actions/runs/%d", base, j.runID)),
		NodeID: github.String(fmt.Sprintf("CR_sim%d", j.id)), HeadBranch: github.String("main"), HeadSHA: github.String(j.headSHA),
		URL:     github.String(fmt.Sprintf("%s/actions/jobs/%d", base, j.id)),
		HTMLURL: github.String(fmt.Sprintf("%s/%s/actions/runs/%d/job/%d", s.URL(), j.repo.fullName(), j.runID, j.id)),
		Status:  github.String(j.status), Conclusion: strOrNil(j.conclusion),
		CreatedAt: ts(j.createdAt), StartedAt: ts(j.startedAt), CompletedAt: ts(j.completedAt),
		Name: github.String(j.name), Steps: s.apiSteps(j),
		CheckRunURL: github.String(fmt.Sprintf("%s/check-runs/%d", base, j.id)),
		Labels:      append([]string{}, j.labels...), RunnerID: idOrNil(j.runnerID), RunnerName: strOrNil(j.runnerName),
		RunnerGroupID: idOrNil(j.groupID), RunnerGroupName: strOrNil(j.groupName), RunAttempt: github.Int64(1),
		WorkflowName: github.String(j.workflowName),
	}
}

// runStatus derives a run's status and conclusion from its jobs, as GitHub does: waiting while a
// job waits for approval and none started, queued until a job starts, in_progress until every job
// (including those announced for later) completed.
func (s *Server) runStatus(ru *run) (status, conclusion string) {
	queued, waiting, done := 0, 0, 0
	conclusion = "success"
	for _, id := range ru.jobIDs {
		j := s.jobs[id]
		switch j.status {
		case StatusWaiting:
			waiting++
		case StatusQueued:
			queued++
		case StatusCompleted:
			done++
			if j.conclusion != "success" {
				conclusion = j.conclusion
			}
		}
	}
	switch {
	case done == len(ru.jobIDs) && ru.held == 0:
		return StatusCompleted, conclusion
	case waiting > 0 && queued+waiting == len(ru.jobIDs):
		return StatusWaiting, ""
	case queued == len(ru.jobIDs):
		return StatusQueued, ""
	}
	return StatusInProgress, ""
}

// stepLen is how long each simulated step of a job's work takes; setupLen the "Set up job" step.
const (
	stepLen  = 5 * time.Second
	setupLen = time.Second
)

// apiSteps renders the steps a job has reached by now: "Set up job", one work step per stepLen
// of its duration (one more every stepLen for a job that runs until FinishJob), then "Complete
// job" once it completed. So the jobs body, and its ETag, changes while a job runs, as on GitHub.
// Callers hold s.mu.
func (s *Server) apiSteps(j *job) []*github.TaskStep {
	steps := []*github.TaskStep{}
	if j.startedAt.IsZero() {
		return steps
	}
	end := s.now()
	if j.status == StatusCompleted {
		end = j.completedAt
	}
	add := func(name string, from, to time.Time) {
		st := &github.TaskStep{Name: github.String(name), Number: github.Int64(int64(len(steps) + 1)),
			Status: github.String(StatusInProgress), StartedAt: ts(from)}
		if !to.After(end) || j.status == StatusCompleted {
			st.Status, st.Conclusion, st.CompletedAt = github.String(StatusCompleted), github.String(orDefault(j.conclusion, "success")), ts(earliest(to, end))
		}
		steps = append(steps, st)
	}
	at := j.startedAt
	add("Set up job", at, at.Add(setupLen))
	at = at.Add(setupLen)
	for n := 1; at.Before(end) || (n == 1 && j.status == StatusCompleted); n++ {
		if j.duration > 0 && n > max(1, int((j.duration+stepLen-1)/stepLen)) {
			break
		}
		add(fmt.Sprintf("Run step %d", n), at, at.Add(stepLen))
		at = at.Add(stepLen)
	}
	if j.status == StatusCompleted {
		add("Complete job", end, end)
	}
	return steps
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (s *Server) apiRun(ru *run) *github.WorkflowRun {
	status, conclusion := s.runStatus(ru)
	base := s.APIURL() + "/repos/" + ru.repo.fullName()
	return &github.WorkflowRun{
		ID: github.Int64(ru.id), Name: github.String(ru.name), HeadBranch: github.String("main"),
		HeadSHA: github.String(fmt.Sprintf("%040x", ru.id)), RunNumber: github.Int(ru.number), RunAttempt: github.Int(1),
		Event: github.String("push"), DisplayTitle: github.String(ru.name), Status: github.String(status),
		Conclusion: strOrNil(conclusion), WorkflowID: github.Int64(1),
		URL:       github.String(fmt.Sprintf("%s/actions/runs/%d", base, ru.id)),
		JobsURL:   github.String(fmt.Sprintf("%s/actions/runs/%d/jobs", base, ru.id)),
		CreatedAt: ts(ru.createdAt), UpdatedAt: ts(ru.updatedAt), RunStartedAt: ts(ru.createdAt),
		Repository: s.apiRepo(ru.repo),
	}
}

// apiRepo is the minimal repository object GitHub embeds (id, name, full_name, owner).
func (s *Server) apiRepo(rp *repo) *github.Repository {
	return &github.Repository{ID: github.Int64(rp.id), NodeID: github.String(fmt.Sprintf("R_sim%d", rp.id)),
		Name: github.String(rp.name), FullName: github.String(rp.fullName()), Private: github.Bool(true),
		Owner: s.apiAccount(rp.owner), URL: github.String(s.APIURL() + "/repos/" + rp.fullName()),
		DefaultBranch: github.String("main")}
}

func (s *Server) apiAccount(a *account) *github.User {
	typ := "User"
	if a.isOrg {
		typ = "Organization"
	}
	return &github.User{Login: github.String(a.login), ID: github.Int64(a.id), Type: github.String(typ),
		NodeID: github.String(fmt.Sprintf("U_sim%d", a.id))}
}

// handleListRuns serves GET /repos/{owner}/{repo}/actions/runs with ?status= and pagination.
func (s *Server) handleListRuns(w http.ResponseWriter, r *http.Request, rp *repo) {
	want := r.URL.Query().Get("status")
	var runs []*github.WorkflowRun
	// Newest first, as GitHub lists runs.
	for _, j := range s.sortedJobs() {
		ru := s.runs[j.runID]
		if ru.repo != rp || ru.jobIDs[0] != j.id {
			continue
		}
		st, concl := s.runStatus(ru)
		if want != "" && want != st && want != concl {
			continue
		}
		runs = append([]*github.WorkflowRun{s.apiRun(ru)}, runs...)
	}
	lo, hi := paginate(w, r, len(runs))
	writeJSON(w, http.StatusOK, &github.WorkflowRuns{TotalCount: github.Int(len(runs)), WorkflowRuns: append([]*github.WorkflowRun{}, runs[lo:hi]...)})
}

// handleRunJobs serves GET /repos/{owner}/{repo}/actions/runs/{id}/jobs.
func (s *Server) handleRunJobs(w http.ResponseWriter, r *http.Request, rp *repo) {
	ru := byPathID(w, r, s.runs, func(ru *run) bool { return ru.repo == rp })
	if ru == nil {
		return
	}
	lo, hi := paginate(w, r, len(ru.jobIDs))
	jobs := []*github.WorkflowJob{}
	for _, jid := range ru.jobIDs[lo:hi] {
		jobs = append(jobs, s.apiJob(s.jobs[jid]))
	}
	writeJSON(w, http.StatusOK, &github.Jobs{TotalCount: github.Int(len(ru.jobIDs)), Jobs: jobs})
}

// handleGetJob serves GET /repos/{owner}/{repo}/actions/jobs/{id}.
func (s *Server) handleGetJob(w http.ResponseWriter, r *http.Request, rp *repo) {
	j := byPathID(w, r, s.jobs, func(j *job) bool { return j.repo == rp })
	if j == nil {
		return
	}
	writeJSON(w, http.StatusOK, s.apiJob(j))
}

// paginate reads ?page= and ?per_page= (default 30, max 100), sets GitHub's Link header and
// returns the slice bounds for n items.
func paginate(w http.ResponseWriter, r *http.Request, n int) (lo, hi int) {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page <= 0 {
		page = 1
	}
	last := max((n+per-1)/per, 1)
	link := func(p int, rel string) string {
		u := url.URL{Path: requestPath(r)}
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(per))
		u.RawQuery = v.Encode()
		return fmt.Sprintf(`<http://%s%s>; rel="%s"`, r.Host, u.String(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(min(page-1, last), "prev"))
	}
	if len(links) > 0 {
		h := links[0]
		for _, l := range links[1:] {
			h += ", " + l
		}
		w.Header().Set("Link", h)
	}
	lo = min((page-1)*per, n)
	return lo, min(lo+per, n)
}
