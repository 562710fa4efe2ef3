package github

import (
	"context"

	gh "github.com/google/go-github/v62/github"
)

// Enterprise scopes: registration, runner groups and the runner list use the enterprise
// endpoints. GitHub's REST API has no enterprise-wide list of queued jobs, so an enterprise's
// demand comes from its scale sets or webhooks, never from Jobs.

// ErrEnterpriseNoJobs is Jobs' answer for an enterprise scope (config.Validate refuses an enterprise
// target that would poll; this guards a Config built by hand).
var ErrEnterpriseNoJobs = &Error{Op: "read queued jobs", Detail: "GitHub's REST API lists no queued jobs for an enterprise: give the target a scale_set, or send the enterprise's workflow_job webhooks to [webhook]"}

// listEnterpriseRunners is ListRunners of an enterprise; GitHub's name filter is not in go-github's
// enterprise call, so listRunners' callers filter by name themselves (FindRunnerByName does).
func (c *Client) listEnterpriseRunners(ctx context.Context, slug string, opts *gh.ListRunnersOptions) (*gh.Runners, *gh.Response, error) {
	return c.gh.Enterprise.ListRunners(ctx, slug, &opts.ListOptions)
}

// enterpriseGroups reads one page of an enterprise's runner groups, in the organisation's type
// (the fields findGroup and RunnerGroupInfo read are the same).
func (c *Client) enterpriseGroups(ctx context.Context, s Scope, page int) ([]*gh.RunnerGroup, *gh.Response, error) {
	out, resp, err := c.gh.Enterprise.ListRunnerGroups(ctx, s.Enterprise, &gh.ListEnterpriseRunnerGroupOptions{ListOptions: gh.ListOptions{PerPage: 100, Page: page}})
	if err != nil {
		return nil, resp, err
	}
	var groups []*gh.RunnerGroup
	for _, g := range out.RunnerGroups {
		groups = append(groups, &gh.RunnerGroup{ID: g.ID, Name: g.Name, Visibility: g.Visibility, Default: g.Default})
	}
	return groups, resp, nil
}
