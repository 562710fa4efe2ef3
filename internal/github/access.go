package github

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"
)

// Access is what GitHub says about the credential acting for a scope (runner-manager verify).
type Access struct {
	// Scopes are a classic token's OAuth scopes (X-OAuth-Scopes). ScopesSent is false when GitHub
	// sent no such header: a fine-grained token, an App installation or a user-to-server token.
	Scopes     []string
	ScopesSent bool
	// Permissions are a GitHub App installation's permissions (name -> "read" or "write"); nil for
	// other credentials.
	Permissions map[string]string
	// The core rate budget left: GitHub's x-ratelimit-* for this credential.
	Limit, Remaining int
	Reset            time.Time
}

var (
	opAccess     = op{"GET /rate_limit", "check the credential", perm{}}
	opGroupRepos = op{"GET /orgs/{org}/actions/runner-groups/{runner_group_id}/repositories", "list the runner group's repositories", permRunners}
)

// permissionSource is an auth source that knows its installation's permissions (auth.App).
type permissionSource interface {
	Permissions(ctx context.Context, owner string) (map[string]string, error)
}

// Access asks GitHub, with the free GET /rate_limit, whether it accepts the credential for s
// and what the credential may do: a classic token's scopes, an App installation's permissions.
func (c *Client) Access(ctx context.Context, s Scope) (Access, error) {
	var out Access
	err := c.call(ctx, s, opAccess, func(ctx context.Context) (*gh.Response, error) {
		rl, resp, err := c.gh.RateLimit.Get(ctx)
		if err != nil {
			return resp, err
		}
		if core := rl.GetCore(); core != nil {
			out.Limit, out.Remaining, out.Reset = core.Limit, core.Remaining, core.Reset.Time
		}
		out.Scopes, out.ScopesSent = parseScopes(resp.Header)
		return resp, nil
	})
	if err != nil {
		return Access{}, err
	}
	if ps, ok := c.o.Auth.(permissionSource); ok {
		if out.Permissions, err = ps.Permissions(ctx, s.Owner); err != nil {
			return Access{}, &Error{Target: s.String(), Op: "read the App installation's permissions", Detail: err.Error(), Err: err}
		}
	}
	return out, nil
}

func parseScopes(h http.Header) ([]string, bool) {
	v, sent := h["X-Oauth-Scopes"]
	if !sent {
		return nil, false
	}
	out := []string{}
	for _, s := range strings.Split(strings.Join(v, ","), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, true
}

// ProbeRuns reads one workflow run of repository s: the read the demand poll makes, without
// its cost (runner-manager verify, for credentials whose permissions GitHub does not list).
func (c *Client) ProbeRuns(ctx context.Context, s Scope) error {
	return c.call(ctx, s, opRuns, func(ctx context.Context) (*gh.Response, error) {
		_, resp, err := c.gh.Actions.ListRepositoryWorkflowRuns(ctx, s.Owner, s.Repo, &gh.ListWorkflowRunsOptions{ListOptions: gh.ListOptions{PerPage: 1}})
		return resp, err
	})
}

// RunnerGroup is an organization's runner group as the credential sees it.
type RunnerGroup struct {
	ID         int64
	Name       string
	Visibility string   // "all", "selected" or "private"
	Repos      []string // visibility "selected": the repositories ("owner/name") whose jobs it takes
}

// RunnerGroupInfo finds the organization's runner group called name (case-insensitive) and, when
// its visibility is "selected", the repositories it serves. "" and "default" are the default
// group, without a call.
func (c *Client) RunnerGroupInfo(ctx context.Context, s Scope, name string) (RunnerGroup, error) {
	if name == "" || strings.EqualFold(name, "default") {
		return RunnerGroup{ID: DefaultRunnerGroupID, Name: "Default", Visibility: "all"}, nil
	}
	if !s.IsOrg() && !s.IsEnterprise() {
		_, err := c.RunnerGroupID(ctx, s, name) // the repository's refusal, phrased once
		return RunnerGroup{}, err
	}
	g, err := c.findGroup(ctx, s, name)
	if err != nil {
		return RunnerGroup{}, err
	}
	out := RunnerGroup{ID: g.GetID(), Name: g.GetName(), Visibility: g.GetVisibility()}
	if out.Visibility != "selected" || s.IsEnterprise() {
		// An enterprise group's "selected" names organisations, not repositories: not a filter
		// of the webhook deliveries this daemon reads.
		return out, nil
	}
	out.Repos = []string{}
	err = eachPage(ctx, c, s, opGroupRepos, func(ctx context.Context, page int) (*gh.ListRepositories, *gh.Response, error) {
		return c.gh.Actions.ListRepositoryAccessRunnerGroup(ctx, s.Owner, out.ID, &gh.ListOptions{PerPage: 100, Page: page})
	}, func(page *gh.ListRepositories) error {
		for _, r := range page.Repositories {
			out.Repos = append(out.Repos, fmt.Sprintf("%s/%s", r.GetOwner().GetLogin(), r.GetName()))
		}
		return nil
	})
	if err != nil {
		return RunnerGroup{}, err
	}
	return out, nil
}
