package ghsim

import "net/http"

func (s *Server) routes() {
	a := s.api
	a.HandleFunc("GET /rate_limit", s.handleRateLimit)
	a.HandleFunc("GET /user", s.handleUser)

	a.HandleFunc("GET /repos/{owner}/{repo}/actions/runs", s.handleListRuns)
	a.HandleFunc("GET /repos/{owner}/{repo}/actions/runs/{id}/jobs", s.handleRunJobs)
	a.HandleFunc("GET /repos/{owner}/{repo}/actions/jobs/{id}", s.handleGetJob)

	for _, base := range []string{"/repos/{owner}/{repo}/actions/runners", "/orgs/{org}/actions/runners", "/enterprises/{enterprise}/actions/runners"} {
		a.HandleFunc("POST "+base+"/generate-jitconfig", s.handleGenerateJIT)
		a.HandleFunc("POST "+base+"/registration-token", s.handleRegistrationToken)
		a.HandleFunc("GET "+base, s.handleListRunners)
		a.HandleFunc("GET "+base+"/downloads", s.handleDownloads)
		a.HandleFunc("GET "+base+"/{id}", s.handleGetRunner)
		a.HandleFunc("DELETE "+base+"/{id}", s.handleDeleteRunner)
	}
	a.HandleFunc("GET /orgs/{org}/actions/runner-groups", s.handleRunnerGroups)
	a.HandleFunc("GET /orgs/{org}/actions/runner-groups/{id}/repositories", s.handleRunnerGroupRepos)
	a.HandleFunc("GET /enterprises/{enterprise}/actions/runner-groups", s.handleEnterpriseRunnerGroups)

	a.HandleFunc("GET /app/installations", s.handleListInstallations)
	a.HandleFunc("POST /app/installations/{id}/access_tokens", s.handleAccessToken)
	a.HandleFunc("GET /orgs/{org}/installation", s.handleFindInstallation)
	a.HandleFunc("GET /users/{org}/installation", s.handleFindInstallation)
	a.HandleFunc("GET /repos/{owner}/{repo}/installation", s.handleFindInstallation)
	a.HandleFunc("GET /installation/repositories", s.handleInstallationRepos)
	a.HandleFunc("GET /orgs/{org}/repos", s.handleOrgRepos)
	a.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeError(w, http.StatusNotFound, "Not Found") })

	p := s.priv
	p.HandleFunc("POST /login/device/code", s.handleDeviceCode)
	p.HandleFunc("POST /login/oauth/access_token", s.handleAccessTokenOAuth)
	p.HandleFunc("GET /_ghsim/downloads/{file}", s.handlePackageFile)
	p.HandleFunc("POST /_ghsim/runner/connect", s.handleRunnerConnect)
	p.HandleFunc("POST /_ghsim/runner/disconnect", s.handleRunnerDisconnect)
	p.HandleFunc("POST /_ghsim/runner/acquire", s.handleRunnerAcquire)
	p.HandleFunc("POST /_ghsim/runner/job", s.handleRunnerJob)
	p.HandleFunc("POST /_ghsim/runner/complete", s.handleRunnerComplete)
	s.adminRoutes(p)
	s.enterpriseAdminRoutes(p)
}
