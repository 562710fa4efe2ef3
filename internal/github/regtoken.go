package github

import (
	"context"

	gh "github.com/google/go-github/v62/github"
)

var (
	opRegTokenRepo = op{"POST /repos/{owner}/{repo}/actions/runners/registration-token", "get a runner registration token", permRunners}
	opRegTokenOrg  = op{"POST /orgs/{org}/actions/runners/registration-token", "get a runner registration token", permRunners}
	opRegTokenEnt  = op{"POST /enterprises/{enterprise}/actions/runners/registration-token", "get a runner registration token", permRunners}
)

// RegistrationToken mints a runner registration token for scope ("org", "owner/repo" or
// "enterprises/<slug>", Scope.String's spelling): the first link of the scale-set token chain
// (internal/scaleset). The token is a secret.
func (c *Client) RegistrationToken(ctx context.Context, scope string) (string, error) {
	s, err := ParseScope(scope)
	if err != nil {
		return "", err
	}
	o := pick(s, opRegTokenRepo, opRegTokenOrg, opRegTokenEnt)
	out, err := callScoped(ctx, c, s, o, scoped[*gh.RegistrationToken]{
		repo: c.gh.Actions.CreateRegistrationToken,
		org:  c.gh.Actions.CreateOrganizationRegistrationToken,
		ent:  c.gh.Enterprise.CreateRegistrationToken,
	})
	if err != nil {
		return "", err
	}
	if out.GetToken() == "" {
		return "", &Error{Target: s.String(), Op: o.what, Detail: "GitHub's answer has no token; try again"}
	}
	return out.GetToken(), nil
}
