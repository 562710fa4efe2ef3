package ghsim

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestOrgReposListsOnlyTheOrgsVisibleRepositories(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateOrg("acme")
	s.CreateOrg("other")
	s.CreateRepo("acme", "api")
	s.CreateRepo("acme", "web")
	s.CreateRepo("other", "tools")
	ctx := context.Background()

	all := newClient(t, s, s.AddToken(TokenOptions{Login: "ops"}))
	var names []string
	opt := &github.RepositoryListByOrgOptions{ListOptions: github.ListOptions{PerPage: 1}}
	for {
		repos, resp, err := all.Repositories.ListByOrg(ctx, "acme", opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range repos {
			names = append(names, r.GetFullName())
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	if len(names) != 2 || names[0] != "acme/api" || names[1] != "acme/web" {
		t.Fatalf("ListByOrg(acme) over pages = %v, want [acme/api acme/web]", names)
	}

	narrow := newClient(t, s, s.AddToken(TokenOptions{Login: "ci", Repos: []string{"acme/web"}}))
	repos, _, err := narrow.Repositories.ListByOrg(ctx, "acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(repos) != 1 || repos[0].GetFullName() != "acme/web" {
		t.Fatalf("a token for acme/web only sees %v", repos)
	}

	_, resp, err := all.Repositories.ListByOrg(ctx, "nobody", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown org: err=%v resp=%v, want 404", err, resp)
	}
}
