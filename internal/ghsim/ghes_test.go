package ghsim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

// TestGHESServesRESTUnderAPIv3: with Options.GHES every REST path, the scale-set bootstrap
// (registration-token, runner-registration) included, answers under /api/v3 as GitHub Enterprise
// Server's do, and no longer at the root; next-page links keep the prefix; requests count under
// the same route names as on github.com.
func TestGHESServesRESTUnderAPIv3(t *testing.T) {
	s := newTestServer(t, Options{GHES: true})
	s.CreateRepo("acme", "api")
	for range 2 {
		if _, err := s.QueueJob("acme/api", []string{"linux"}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := s.APIURL(), s.URL()+"/api/v3"; got != want {
		t.Fatalf("APIURL %q, want %q", got, want)
	}
	tok := s.AddToken(TokenOptions{})
	ctx := context.Background()
	c := newClient(t, s, tok)
	if _, _, err := c.Actions.ListRunners(ctx, "acme", "api", nil); err != nil {
		t.Fatalf("runners under /api/v3: %v", err)
	}
	runs, res, err := c.Actions.ListRepositoryWorkflowRuns(ctx, "acme", "api", &github.ListWorkflowRunsOptions{ListOptions: github.ListOptions{PerPage: 1}})
	if err != nil || len(runs.WorkflowRuns) != 1 {
		t.Fatalf("runs under /api/v3: %v", err)
	}
	if link := res.Header.Get("Link"); !strings.Contains(link, "/api/v3/repos/acme/api/actions/runs?") || res.NextPage != 2 {
		t.Errorf("Link %q does not keep /api/v3", link)
	}
	if u := runs.WorkflowRuns[0].GetURL(); !strings.HasPrefix(u, s.APIURL()+"/repos/") {
		t.Errorf("run url %q is not under the API URL", u)
	}
	if r := do(t, "GET", s.URL()+"/repos/acme/api/actions/runners", "Bearer "+tok, nil, nil); r.code != http.StatusNotFound {
		t.Errorf("REST at the root of a GHES host: %d, want 404", r.code)
	}
	// The scale-set bootstrap a GHES client makes, then a call on the Actions service.
	ac := connect(t, s, "acme")
	if r := ac.call("GET", "_apis/runtime/runnergroups/?groupName=default", nil); r.code != http.StatusOK {
		t.Errorf("Actions service after a GHES bootstrap: %d %s", r.code, r.body)
	}
	if !s.opts.Actions.GHES {
		t.Error("Options.GHES does not play GHES's message flow (Actions.GHES)")
	}
	req := s.Requests()
	for _, k := range []string{"POST /orgs/{org}/actions/runners/registration-token", "GET /repos/{owner}/{repo}/actions/runners", "GET (outside /api/v3)"} {
		if req[k] != 1 {
			t.Errorf("Requests()[%q] = %d, want 1 (all: %v)", k, req[k], req)
		}
	}
}
