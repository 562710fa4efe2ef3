package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	gh "github.com/google/go-github/v62/github"
)

// JITConfig is a just-in-time runner registration. Encoded is the secret `run.sh --jitconfig`
// argument: String and LogValue never show it.
type JITConfig struct {
	RunnerID int64
	Name     string
	Encoded  string
}

func (j JITConfig) String() string {
	return fmt.Sprintf("JIT config for runner %s (id %d)", j.Name, j.RunnerID)
}

// LogValue keeps the encoded config out of logs even when the whole value is logged.
func (j JITConfig) LogValue() slog.Value {
	return slog.GroupValue(slog.Int64("runner_id", j.RunnerID), slog.String("name", j.Name))
}

// Runner is a registered self-hosted runner as GitHub reports it.
type Runner struct {
	ID     int64
	Name   string
	OS     string
	Status string // "online" or "offline"
	Busy   bool
	Labels []string
}

var (
	opJITRepo    = op{"POST /repos/{owner}/{repo}/actions/runners/generate-jitconfig", "register a runner", permRunners}
	opJITOrg     = op{"POST /orgs/{org}/actions/runners/generate-jitconfig", "register a runner", permRunners}
	opGroups     = op{"GET /orgs/{org}/actions/runner-groups", "look up the runner group", permRunners}
	opRunnerRepo = op{"GET /repos/{owner}/{repo}/actions/runners", "list runners", permRunners}
	opRunnerOrg  = op{"GET /orgs/{org}/actions/runners", "list runners", permRunners}
	opDelRepo    = op{"DELETE /repos/{owner}/{repo}/actions/runners/{runner_id}", "remove a runner", permRunners}
	opDelOrg     = op{"DELETE /orgs/{org}/actions/runners/{runner_id}", "remove a runner", permRunners}

	opJITEnt    = op{"POST /enterprises/{enterprise}/actions/runners/generate-jitconfig", "register a runner", permRunners}
	opGroupsEnt = op{"GET /enterprises/{enterprise}/actions/runner-groups", "look up the runner group", permRunners}
	opRunnerEnt = op{"GET /enterprises/{enterprise}/actions/runners", "list runners", permRunners}
	opDelEnt    = op{"DELETE /enterprises/{enterprise}/actions/runners/{runner_id}", "remove a runner", permRunners}
)

// DefaultRunnerGroupID is GitHub's "Default" runner group, the only one a repository has.
const DefaultRunnerGroupID = 1

// GenerateJITConfig registers an ephemeral runner and returns its JIT config. runnerGroupID 0
// means the default group. A 409 (the name exists) comes back as *Error with Status 409.
func (c *Client) GenerateJITConfig(ctx context.Context, s Scope, name string, labels []string, runnerGroupID int64, workFolder string) (JITConfig, error) {
	if runnerGroupID == 0 {
		runnerGroupID = DefaultRunnerGroupID
	}
	req := &gh.GenerateJITConfigRequest{Name: name, RunnerGroupID: runnerGroupID, Labels: labels}
	if workFolder != "" {
		req.WorkFolder = gh.String(workFolder)
	}
	var out *gh.JITRunnerConfig
	o := pick(s, opJITRepo, opJITOrg, opJITEnt)
	err := c.call(ctx, s, o, func(ctx context.Context) (resp *gh.Response, err error) {
		switch {
		case s.IsEnterprise():
			out, resp, err = c.gh.Enterprise.GenerateEnterpriseJITConfig(ctx, s.Enterprise, req)
		case s.IsOrg():
			out, resp, err = c.gh.Actions.GenerateOrgJITConfig(ctx, s.Owner, req)
		default:
			out, resp, err = c.gh.Actions.GenerateRepoJITConfig(ctx, s.Owner, s.Repo, req)
		}
		return resp, err
	})
	if err != nil {
		return JITConfig{}, err
	}
	if out.GetEncodedJITConfig() == "" || out.GetRunner().GetID() == 0 {
		return JITConfig{}, &Error{Target: s.String(), Op: o.what, Detail: "GitHub's answer has no runner id or JIT config; try again"}
	}
	return JITConfig{RunnerID: out.GetRunner().GetID(), Name: out.GetRunner().GetName(), Encoded: out.GetEncodedJITConfig()}, nil
}

// RunnerGroupID resolves an organisation's or enterprise's runner group by name (case-insensitive), cached for
// the client's life. "" and "default" are the default group; repositories only have that one.
func (c *Client) RunnerGroupID(ctx context.Context, s Scope, name string) (int64, error) {
	if name == "" || strings.EqualFold(name, "default") {
		return DefaultRunnerGroupID, nil
	}
	if !s.IsOrg() && !s.IsEnterprise() {
		return 0, &Error{Target: s.String(), Op: opGroups.what,
			Detail: fmt.Sprintf("runner group %q: repository runners can only join the default group; remove runner_group or target the organization", name)}
	}
	key := strings.ToLower(s.String() + "/" + name)
	c.mu.Lock()
	id, ok := c.groups[key]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	g, err := c.findGroup(ctx, s, name)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.groups[key] = g.GetID()
	c.mu.Unlock()
	return g.GetID(), nil
}

// findGroup lists the organization's (or enterprise's) runner groups for the one called name
// (case-insensitive).
func (c *Client) findGroup(ctx context.Context, s Scope, name string) (*gh.RunnerGroup, error) {
	list, o := c.orgGroups, opGroups
	if s.IsEnterprise() {
		list, o = c.enterpriseGroups, opGroupsEnt
	}
	for page := 1; page != 0; {
		var groups []*gh.RunnerGroup
		var next int
		err := c.call(ctx, s, o, func(ctx context.Context) (resp *gh.Response, err error) {
			groups, resp, err = list(ctx, s, page)
			next = nextPage(resp)
			return resp, err
		})
		page = next
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(groups, func(g *gh.RunnerGroup) bool { return strings.EqualFold(g.GetName(), name) }); i >= 0 {
			return groups[i], nil
		}
	}
	where, fix := "organization "+s.Owner, "create it, or fix runner_group"
	if s.IsEnterprise() {
		where, fix = "enterprise "+s.Enterprise, "create it in the enterprise's Actions settings, or fix runner_group"
	}
	return nil, &Error{Target: s.String(), Op: o.what, Status: http.StatusNotFound,
		Detail: fmt.Sprintf("%s has no runner group %q that %s can see: %s", where, name, c.o.Auth.Describe(), fix)}
}

// orgGroups reads one page of an organisation's runner groups.
func (c *Client) orgGroups(ctx context.Context, s Scope, page int) ([]*gh.RunnerGroup, *gh.Response, error) {
	out, resp, err := c.gh.Actions.ListOrganizationRunnerGroups(ctx, s.Owner, &gh.ListOrgRunnerGroupOptions{ListOptions: gh.ListOptions{PerPage: 100, Page: page}})
	if err != nil {
		return nil, resp, err
	}
	return out.RunnerGroups, resp, nil
}

// ListRunners returns every runner registered at the scope (all pages).
func (c *Client) ListRunners(ctx context.Context, s Scope) ([]Runner, error) {
	opts := &gh.ListRunnersOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	var out []Runner
	err := eachPage(ctx, c, s, pick(s, opRunnerRepo, opRunnerOrg, opRunnerEnt), func(ctx context.Context, page int) (*gh.Runners, *gh.Response, error) {
		opts.Page = page
		switch {
		case s.IsEnterprise():
			return c.listEnterpriseRunners(ctx, s.Enterprise, opts)
		case s.IsOrg():
			return c.gh.Actions.ListOrganizationRunners(ctx, s.Owner, opts)
		}
		return c.gh.Actions.ListRunners(ctx, s.Owner, s.Repo, opts)
	}, func(page *gh.Runners) error {
		for _, r := range page.Runners {
			out = append(out, convertRunner(r))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func convertRunner(r *gh.Runner) Runner {
	out := Runner{ID: r.GetID(), Name: r.GetName(), OS: r.GetOS(), Status: r.GetStatus(), Busy: r.GetBusy()}
	for _, l := range r.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

// DeleteRunner deregisters a runner. A runner already gone (404) is success; one running a job
// (422) returns ErrRunnerBusy, which is not a failure.
func (c *Client) DeleteRunner(ctx context.Context, s Scope, runnerID int64) error {
	err := c.call(ctx, s, pick(s, opDelRepo, opDelOrg, opDelEnt), func(ctx context.Context) (*gh.Response, error) {
		switch {
		case s.IsEnterprise():
			return c.gh.Enterprise.RemoveRunner(ctx, s.Enterprise, runnerID)
		case s.IsOrg():
			return c.gh.Actions.RemoveOrganizationRunner(ctx, s.Owner, runnerID)
		}
		return c.gh.Actions.RemoveRunner(ctx, s.Owner, s.Repo, runnerID)
	})
	var e *Error
	if errors.As(err, &e) {
		switch e.Status {
		case http.StatusNotFound:
			return nil
		case http.StatusUnprocessableEntity:
			return fmt.Errorf("target %s: runner %d: %w", s, runnerID, ErrRunnerBusy)
		}
	}
	return err
}
