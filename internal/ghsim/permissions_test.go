package ghsim

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// A credential is refused (403) exactly where it lacks what the endpoint needs, and a classic
// token's scopes come back in X-OAuth-Scopes on every answer while other kinds send none.
func TestCredentialPermissions(t *testing.T) {
	ctx := context.Background()
	clock := NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	s := newTestServer(t, Options{Clock: clock})
	s.CreateRepo("acme", "api")
	key := rsaKey(t)
	s.CreateApp(5, &key.PublicKey)
	instID, _ := s.CreateInstallation(5, "acme")
	if err := s.SetInstallationPermissions(instID, map[string]string{"actions": "read", "administration": "write", "metadata": "read"}); err != nil {
		t.Fatal(err)
	}
	itok, _, err := newClient(t, s, appJWT(t, key, 5, clock.Now(), clock.Now().Add(5*time.Minute))).Apps.CreateInstallationToken(ctx, instID, nil)
	if err != nil || itok.GetPermissions().GetOrganizationSelfHostedRunners() != "" || itok.GetPermissions().GetAdministration() != "write" {
		t.Fatalf("installation token permissions = %+v, %v", itok.GetPermissions(), err)
	}

	type want struct{ repoRunners, orgRunners, runs int }
	for _, tc := range []struct {
		name   string
		tok    string
		scopes string // X-OAuth-Scopes; "" = header absent
		want   want
	}{
		{"classic default", s.AddToken(TokenOptions{}), "admin:org, repo", want{200, 200, 200}},
		{"classic repo only", s.AddToken(TokenOptions{Scopes: []string{"repo"}}), "repo", want{200, 403, 200}},
		{"classic no scope", s.AddToken(TokenOptions{Scopes: []string{}}), "", want{403, 403, 403}},
		{"fine-grained default", s.AddToken(TokenOptions{FineGrained: true}), "", want{200, 200, 200}},
		{"fine-grained read-only admin", s.AddToken(TokenOptions{FineGrained: true, Permissions: map[string]string{"administration": "read", "actions": "read"}}), "", want{403, 403, 200}},
		{"fine-grained no actions", s.AddToken(TokenOptions{FineGrained: true, Permissions: map[string]string{"administration": "write", "organization_self_hosted_runners": "write"}}), "", want{200, 200, 403}},
		{"installation without org runners", itok.GetToken(), "", want{200, 403, 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, s, tc.tok)
			_, resp, err := c.Actions.ListRunners(ctx, "acme", "api", nil)
			if got := answered(err); got != tc.want.repoRunners {
				t.Errorf("repository runners: %v, want %d", err, tc.want.repoRunners)
			}
			if resp == nil {
				t.Fatal("no response")
			}
			if _, present := resp.Header["X-Oauth-Scopes"]; present != (tc.scopes != "" || tc.name == "classic no scope") || resp.Header.Get("X-OAuth-Scopes") != tc.scopes {
				t.Errorf("X-OAuth-Scopes = %q (present %v), want %q", resp.Header.Get("X-OAuth-Scopes"), present, tc.scopes)
			}
			if _, _, err := c.Actions.ListOrganizationRunners(ctx, "acme", nil); answered(err) != tc.want.orgRunners {
				t.Errorf("organization runners: %v, want %d", err, tc.want.orgRunners)
			}
			if _, _, err := c.Actions.ListRepositoryWorkflowRuns(ctx, "acme", "api", nil); answered(err) != tc.want.runs {
				t.Errorf("workflow runs: %v, want %d", err, tc.want.runs)
			}
		})
	}
}

// answered is the status of a call: 200 when it succeeded.
func answered(err error) int {
	if err == nil {
		return http.StatusOK
	}
	return statusOf(err)
}

// A runner group of visibility "selected" lists its repositories, and its runners take no job
// of any other repository.
func TestRunnerGroupSelectedRepositories(t *testing.T) {
	ctx := context.Background()
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	s.CreateRepo("acme", "web")
	gid := s.CreateRunnerGroup("acme", "builders")
	if err := s.SetRunnerGroupRepos(gid, false, "acme/web"); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s, s.AddToken(TokenOptions{}))
	groups, _, err := c.Actions.ListOrganizationRunnerGroups(ctx, "acme", nil)
	if err != nil || len(groups.RunnerGroups) != 2 || groups.RunnerGroups[1].GetVisibility() != "selected" || groups.RunnerGroups[0].GetVisibility() != "all" {
		t.Fatalf("groups = %+v, %v", groups, err)
	}
	repos, _, err := c.Actions.ListRepositoryAccessRunnerGroup(ctx, "acme", gid, nil)
	if err != nil || repos.GetTotalCount() != 1 || repos.Repositories[0].GetName() != "web" {
		t.Fatalf("group repositories = %+v, %v", repos, err)
	}
	g := s.groups[gid]
	rn := &runner{scope: "org:acme", groupID: gid}
	if s.inScope(rn, &job{repo: s.repos["acme/api"]}) || !s.inScope(rn, &job{repo: s.repos["acme/web"]}) {
		t.Fatal("a selected group's runner took a job of a repository it does not serve, or refused one it does")
	}
	if err := s.SetRunnerGroupRepos(gid, true); err != nil || g.repos != nil || !s.inScope(rn, &job{repo: s.repos["acme/api"]}) {
		t.Fatalf("visibility all again: %v", err)
	}
	if err := s.SetRunnerGroupRepos(1, true); err == nil {
		t.Fatal("the repository default group was changed")
	}
	if _, _, err := c.Actions.ListRepositoryAccessRunnerGroup(ctx, "acme", 999, nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("unknown group: %v", err)
	}
}
