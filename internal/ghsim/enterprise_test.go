package ghsim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

// entToken is a classic token with the enterprise runner scope.
func entToken(s *Server) string {
	return s.AddToken(TokenOptions{Scopes: []string{scopeManageRunnersEnterprise}})
}

// TestEnterpriseRunners: an enterprise's runners are registered, listed and deleted at the
// enterprise endpoints, join an enterprise runner group, and take the jobs of every repository
// of the enterprise's organisations (not of another organisation's).
func TestEnterpriseRunners(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	s.CreateRepo("other", "web")
	s.AddEnterprise("acme-corp", "acme")
	group := s.CreateEnterpriseRunnerGroup("acme-corp", "ci")
	ctx := context.Background()
	gh := newClient(t, s, entToken(s))

	groups, _, err := gh.Enterprise.ListRunnerGroups(ctx, "acme-corp", nil)
	if err != nil || groups.GetTotalCount() != 2 || groups.RunnerGroups[1].GetName() != "ci" || groups.RunnerGroups[1].GetID() != group {
		t.Fatalf("runner groups: %+v, %v", groups, err)
	}
	jit, _, err := gh.Enterprise.GenerateEnterpriseJITConfig(ctx, "acme-corp", &github.GenerateJITConfigRequest{Name: "e1", RunnerGroupID: group, Labels: []string{"linux"}})
	if err != nil {
		t.Fatal(err)
	}
	if rs := s.Runners(); len(rs) != 1 || rs[0].Scope != "enterprises/acme-corp" || rs[0].GroupID != group {
		t.Fatalf("runners %+v", rs)
	}
	list, _, err := gh.Enterprise.ListRunners(ctx, "acme-corp", nil)
	if err != nil || list.TotalCount != 1 || list.Runners[0].GetName() != "e1" {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if org, _, err := newClient(t, s, s.AddToken(TokenOptions{})).Actions.ListOrganizationRunners(ctx, "acme", nil); err != nil || org.TotalCount != 0 {
		t.Fatalf("the organisation lists the enterprise's runner: %+v, %v", org, err)
	}
	// Another organisation's job is not the enterprise runner's; the enterprise's is.
	if _, err := s.QueueJob("other/web", []string{"linux"}, 0); err != nil {
		t.Fatal(err)
	}
	mine, _ := s.QueueJob("acme/api", []string{"linux"}, 0)
	if a := playRunner(t, s, jit.GetEncodedJITConfig(), true); a.JobID != mine {
		t.Fatalf("the enterprise runner took job %d, want %d (acme/api)", a.JobID, mine)
	}
	// A second runner, deleted before it ran anything.
	jit2, _, err := gh.Enterprise.GenerateEnterpriseJITConfig(ctx, "acme-corp", &github.GenerateJITConfigRequest{Name: "e2", RunnerGroupID: 1, Labels: []string{"linux"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gh.Enterprise.RemoveRunner(ctx, "acme-corp", jit2.Runner.GetID()); err != nil {
		t.Fatal(err)
	}
	tok, _, err := gh.Enterprise.CreateRegistrationToken(ctx, "acme-corp")
	if err != nil || tok.GetToken() == "" {
		t.Fatalf("registration token: %v", err)
	}
	// Another organisation's group is not the enterprise's.
	orgGroup := s.CreateRunnerGroup("acme", "org-only")
	_, _, err = gh.Enterprise.GenerateEnterpriseJITConfig(ctx, "acme-corp", &github.GenerateJITConfigRequest{Name: "e3", RunnerGroupID: orgGroup, Labels: []string{"linux"}})
	if status(err) != http.StatusNotFound {
		t.Fatalf("JIT in an organisation's group: %v, want 404", err)
	}
}

// TestEnterpriseCredentials: only a classic token with manage_runners:enterprise (or
// admin:enterprise) reaches the enterprise endpoints, as on GitHub.
func TestEnterpriseCredentials(t *testing.T) {
	s := newTestServer(t, Options{})
	s.AddEnterprise("acme-corp", "acme")
	inst := newSecret("ghs_")
	s.mu.Lock()
	s.tokens[inst] = &token{kind: "installation", login: "app[bot]", perms: DefaultPermissions(), bucket: s.bucketFor("inst")}
	s.mu.Unlock()
	for _, tc := range []struct {
		name, tok string
		want      int
	}{
		{"manage_runners:enterprise", entToken(s), http.StatusOK},
		{"admin:enterprise", s.AddToken(TokenOptions{Scopes: []string{scopeAdminEnterprise}}), http.StatusOK},
		{"classic token without the scope", s.AddToken(TokenOptions{}), http.StatusForbidden},
		{"fine-grained token", s.AddToken(TokenOptions{FineGrained: true}), http.StatusForbidden},
		{"App installation token", inst, http.StatusForbidden},
		{"unknown enterprise", "", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slug := "acme-corp"
			if tc.tok == "" {
				tc.tok, slug = entToken(s), "nope"
			}
			_, resp, err := newClient(t, s, tc.tok).Enterprise.ListRunners(context.Background(), slug, nil)
			if got := status(err); err == nil && resp.StatusCode != tc.want || err != nil && got != tc.want {
				t.Fatalf("status %d (%v), want %d", got, err, tc.want)
			}
		})
	}
}

// TestEnterpriseWebhook: a workflow_job delivery of a repository whose organisation belongs to an
// enterprise carries the "enterprise" object, as GitHub's enterprise webhooks do.
func TestEnterpriseWebhook(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	s.CreateRepo("other", "web")
	id := s.AddEnterprise("acme-corp", "acme")
	hookURL, ch := hookReceiver(t, "k")
	s.AddWebhook(hookURL, "k")
	if _, err := s.QueueJob("acme/api", []string{"linux"}, 0); err != nil {
		t.Fatal(err)
	}
	// go-github v62's WorkflowJobEvent has no Enterprise field: read the raw payload.
	enterpriseOf := func(raw []byte) *github.Enterprise {
		var p struct {
			Enterprise *github.Enterprise `json:"enterprise"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		return p.Enterprise
	}
	d := next(t, ch)
	if e := enterpriseOf(d.raw); e.GetSlug() != "acme-corp" || int64(e.GetID()) != id {
		t.Fatalf("delivery's enterprise: %s", d.raw)
	}
	if _, err := s.QueueJob("other/web", []string{"linux"}, 0); err != nil {
		t.Fatal(err)
	}
	if d := next(t, ch); enterpriseOf(d.raw) != nil {
		t.Fatalf("a delivery outside the enterprise has one: %s", d.raw)
	}
}

// TestEnterpriseConfigURL: a scale set's config URL .../enterprises/<slug> names the enterprise.
func TestEnterpriseConfigURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want scope
	}{
		{"https://github.com/enterprises/Acme-Corp", "enterprise:acme-corp"},
		{"https://github.com/acme", "org:acme"},
		{"https://github.com/enterprises", "org:enterprises"}, // an organisation may be called that
		{"https://github.com/acme/api", "repo:acme/api"},
	} {
		if got := configScope(tc.url); got != tc.want {
			t.Errorf("configScope(%s) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func status(err error) int {
	var e *github.ErrorResponse
	if errors.As(err, &e) {
		return e.Response.StatusCode
	}
	return 0
}

// TestEnterpriseScaleSet: a scale set whose config URL names an enterprise is the enterprise's: its
// token chain runs on the enterprise's registration token, and it takes the job of an enterprise
// organisation's repository that names it; its runner is an enterprise runner.
func TestEnterpriseScaleSet(t *testing.T) {
	s, _ := newScaleSetServer(t, ActionsOptions{LongPoll: 50 * time.Millisecond, AssignTimeout: time.Hour})
	s.AddEnterprise("acme-corp", "acme")
	r := do(t, "POST", s.URL()+"/enterprises/acme-corp/actions/runners/registration-token", "Bearer "+entToken(s), nil, nil)
	if r.code != http.StatusCreated {
		t.Fatalf("registration-token: %d %s", r.code, r.body)
	}
	r = do(t, "POST", s.URL()+"/actions/runner-registration", "RemoteAuth "+r.json(t)["token"].(string),
		map[string]string{"url": "https://github.com/enterprises/acme-corp", "runner_event": "register"}, nil)
	if r.code != http.StatusOK {
		t.Fatalf("runner-registration: %d %s", r.code, r.body)
	}
	c := &actionsConn{t: t, s: s, base: r.json(t)["url"].(string), admin: r.json(t)["token"].(string)}
	c.createSet("ent-linux")
	if r := c.openSession("host-a"); r.code != http.StatusOK {
		t.Fatalf("session: %d %s", r.code, r.body)
	}
	id, _ := s.QueueJob("acme/api", []string{"ent-linux"}, time.Second)
	if r := c.get(0, "1"); r.code != http.StatusOK {
		t.Fatalf("poll: %d %s (the enterprise set got no job)", r.code, r.body)
	}
	if _, got := takeJob(t, s, c, "ent-runner-1"); got != id {
		t.Fatalf("the enterprise set's runner took job %d, want %d", got, id)
	}
	if rs := s.Runners(); len(rs) != 1 || rs[0].Scope != "enterprises/acme-corp" {
		t.Fatalf("runners %+v", rs)
	}
}

// TestEnterpriseAdmin: the admin API sets up an enterprise, its runner group and a token that
// reaches it, as the Go API does.
func TestEnterpriseAdmin(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	a := s.URL() + "/_ghsim/admin"
	if r := do(t, "POST", a+"/enterprises", "", map[string]any{"slug": "acme-corp", "orgs": []string{"acme"}}, nil); r.code != http.StatusOK {
		t.Fatalf("enterprises: %d %s", r.code, r.body)
	}
	r := do(t, "POST", a+"/enterprises/runner-groups", "", map[string]any{"slug": "acme-corp", "name": "ci"}, nil)
	if r.code != http.StatusOK {
		t.Fatalf("runner-groups: %d %s", r.code, r.body)
	}
	gid := int64(r.json(t)["id"].(float64))
	if r := do(t, "POST", a+"/enterprises", "", map[string]any{}, nil); r.code != http.StatusUnprocessableEntity {
		t.Fatalf("no slug: %d, want 422", r.code)
	}
	tok := do(t, "POST", a+"/enterprise-tokens", "", map[string]any{"login": "ent-owner"}, nil).json(t)["token"].(string)
	groups, _, err := newClient(t, s, tok).Enterprise.ListRunnerGroups(context.Background(), "acme-corp", nil)
	if err != nil || len(groups.RunnerGroups) != 2 || groups.RunnerGroups[1].GetID() != gid {
		t.Fatalf("enterprise groups through the admin-made token: %+v, %v", groups, err)
	}
}
