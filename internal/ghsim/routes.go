package ghsim

import "net/http"

func (s *Server) routes() {
	a := s.api
	a.HandleFunc("GET /rate_limit", s.handleRateLimit)
	a.HandleFunc("GET /user", s.asToken(s.handleUser))

	a.HandleFunc("GET /repos/{owner}/{repo}/actions/runs", s.inRepo(accessActions, s.handleListRuns))
	a.HandleFunc("GET /repos/{owner}/{repo}/actions/runs/{id}/jobs", s.inRepo(accessActions, s.handleRunJobs))
	a.HandleFunc("GET /repos/{owner}/{repo}/actions/jobs/{id}", s.inRepo(accessActions, s.handleGetJob))

	for _, base := range []string{"/repos/{owner}/{repo}/actions/runners", "/orgs/{org}/actions/runners", "/enterprises/{enterprise}/actions/runners"} {
		a.HandleFunc("POST "+base+"/generate-jitconfig", s.handleGenerateJIT)
		a.HandleFunc("POST "+base+"/registration-token", s.inRunnerScope(s.handleRegistrationToken))
		a.HandleFunc("GET "+base, s.inRunnerScope(s.handleListRunners))
		a.HandleFunc("GET "+base+"/downloads", s.inRunnerScope(s.handleDownloads))
		a.HandleFunc("GET "+base+"/{id}", s.inRunnerScope(s.handleGetRunner))
		a.HandleFunc("DELETE "+base+"/{id}", s.inRunnerScope(s.handleDeleteRunner))
	}
	a.HandleFunc("GET /orgs/{org}/actions/runner-groups", s.inOrg(accessRunners, s.handleRunnerGroups))
	a.HandleFunc("GET /orgs/{org}/actions/runner-groups/{id}/repositories", s.inOrg(accessRunners, s.handleRunnerGroupRepos))
	a.HandleFunc("GET /enterprises/{enterprise}/actions/runner-groups", s.handleEnterpriseRunnerGroups)

	a.HandleFunc("GET /app/installations", s.asApp(s.handleListInstallations))
	a.HandleFunc("POST /app/installations/{id}/access_tokens", s.asApp(s.handleAccessToken))
	a.HandleFunc("GET /orgs/{org}/installation", s.asApp(s.handleFindInstallation))
	a.HandleFunc("GET /users/{org}/installation", s.asApp(s.handleFindInstallation))
	a.HandleFunc("GET /repos/{owner}/{repo}/installation", s.asApp(s.handleFindInstallation))
	a.HandleFunc("GET /installation/repositories", s.asToken(s.handleInstallationRepos))
	a.HandleFunc("GET /orgs/{org}/repos", s.asToken(s.handleOrgRepos))
	a.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeError(w, http.StatusNotFound, "Not Found") })

	p := s.priv
	p.HandleFunc("POST /login/device/code", s.asOAuthClient(s.handleDeviceCode))
	p.HandleFunc("POST /login/oauth/access_token", s.asOAuthClient(s.handleAccessTokenOAuth))
	p.HandleFunc("GET /_ghsim/downloads/{file}", s.handlePackageFile)
	p.HandleFunc("POST /_ghsim/runner/connect", s.asRunner(s.handleRunnerConnect))
	p.HandleFunc("POST /_ghsim/runner/disconnect", s.asRunner(s.handleRunnerDisconnect))
	p.HandleFunc("POST /_ghsim/runner/acquire", s.asRunner(s.handleRunnerAcquire))
	p.HandleFunc("POST /_ghsim/runner/job", s.onRunnersJob(s.handleRunnerJob))
	p.HandleFunc("POST /_ghsim/runner/complete", s.onRunnersJob(s.handleRunnerComplete))
	s.adminRoutes(p)
	s.enterpriseAdminRoutes(p)
}
