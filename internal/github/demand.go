package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v62/github"
)

// Job is a queued workflow job a target's runners could take.
type Job struct {
	ID        int64
	RunID     int64
	Repo      string // owner/name
	Name      string
	Labels    []string
	CreatedAt time.Time
	// RunnerName is the runner running the job; "" while it is queued (see Jobs).
	RunnerName string
}

// PartialError is returned by QueuedJobs, with the jobs of every other repository, when some of an
// organization's repositories refused the read (403, or another refusal that retrying will not
// change). Partial marks it for the engine: the jobs alongside it are valid.
type PartialError struct {
	Target  string
	Skipped map[string]error // repository "owner/name" -> why it was skipped
}

func (e *PartialError) Error() string {
	names := make([]string, 0, len(e.Skipped))
	for n := range e.Skipped {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, e.Skipped[n].Error())
	}
	return fmt.Sprintf("target %s: skipped %d repositories whose jobs cannot be read (%s); the other repositories are served: %s",
		e.Target, len(names), strings.Join(names, ", "), strings.Join(parts, "; "))
}

// Partial reports that the jobs returned alongside the error are valid.
func (e *PartialError) Partial() bool { return true }

var (
	opRuns     = op{"GET /repos/{owner}/{repo}/actions/runs", "list workflow runs", permActions}
	opJobs     = op{"GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs", "list workflow jobs", permActions}
	opInstRepo = op{"GET /installation/repositories", "list the App installation's repositories", permMetadata}
	opOrgRepo  = op{"GET /orgs/{org}/repos", "list the organization's repositories", permMetadata}
)

// runStatuses are the run states that can hold queued jobs. A queued run obviously does; an
// in_progress run does too once some of its jobs started and others (matrix legs, jobs whose
// needs just finished) wait for a runner. Runs that are waiting (environment approval),
// requested or pending hold no job a runner could take yet.
var runStatuses = []string{"queued", "in_progress"}

// QueuedJobs returns the queued jobs of the scope whose runs-on labels the given runner labels
// satisfy (Jobs without the ones in progress).
func (c *Client) QueuedJobs(ctx context.Context, s Scope, runnerLabels []string) ([]Job, error) {
	jobs, err := c.Jobs(ctx, s, runnerLabels)
	queued := jobs[:0:0]
	for _, j := range jobs {
		if j.RunnerName == "" {
			queued = append(queued, j)
		}
	}
	return queued, err
}

// Jobs returns the queued jobs of the scope whose runs-on labels the given runner labels satisfy,
// and, at no extra cost (their runs are read anyway), those in progress on a runner (RunnerName
// set). For an organisation it walks the repositories the credential can see (the App
// installation's, or the organisation's); one that refuses the read is skipped and named in a
// *PartialError returned with the other repositories' jobs. Every GET is conditional, so an idle
// scope costs no rate budget.
func (c *Client) Jobs(ctx context.Context, s Scope, runnerLabels []string) ([]Job, error) {
	if s.IsEnterprise() {
		return nil, fmt.Errorf("target %s: %w", s, ErrEnterpriseNoJobs)
	}
	if !s.IsOrg() {
		return c.pacedRepoJobs(ctx, s, runnerLabels)
	}
	repos, err := c.orgRepos(ctx, s)
	if err != nil {
		return nil, err
	}
	// In parallel, as many at once as the governor lets through: a pass of 300 repositories at
	// 100 ms round trips takes seconds, not a minute.
	type result struct {
		jobs []Job
		err  error
	}
	results := make([]result, len(repos))
	sem := make(chan struct{}, c.gov.Options().Concurrent)
	var wg sync.WaitGroup
	for i, r := range repos {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i].jobs, results[i].err = c.pacedRepoJobs(ctx, r, runnerLabels)
		}()
	}
	wg.Wait()
	var out []Job
	var partial *PartialError
	for i, r := range repos {
		jobs, err := results[i].jobs, results[i].err
		var e *Error
		switch {
		case errors.As(err, &e) && e.Status == http.StatusNotFound:
			// Actions disabled, or the repository vanished between the two lists: nothing queued.
			continue
		case errors.As(err, &e) && !e.Retryable && ctx.Err() == nil:
			// This repository refuses (a 403 on its runs): it alone is skipped, the rest are served.
			if partial == nil {
				partial = &PartialError{Target: s.String(), Skipped: map[string]error{}}
			}
			partial.Skipped[r.String()] = err
			continue
		case err != nil:
			return nil, err // the credential, the budget or GitHub itself: every repository would fail
		}
		out = append(out, jobs...)
	}
	if partial != nil {
		return out, partial
	}
	return out, nil
}

// repoQueuedJobs reads the runs of the given statuses and their jobs; runs is how many runs it saw.
func (c *Client) repoQueuedJobs(ctx context.Context, s Scope, runnerLabels []string, statuses []string) (out []Job, runs int, err error) {
	for _, status := range statuses {
		opts := &gh.ListWorkflowRunsOptions{Status: status, ListOptions: gh.ListOptions{PerPage: 100}}
		err := eachPage(ctx, c, s, opRuns, func(ctx context.Context, page int) (*gh.WorkflowRuns, *gh.Response, error) {
			opts.Page = page
			return c.gh.Actions.ListRepositoryWorkflowRuns(ctx, s.Owner, s.Repo, opts)
		}, func(page *gh.WorkflowRuns) error {
			runs += len(page.WorkflowRuns)
			for _, run := range page.WorkflowRuns {
				jobs, err := c.runQueuedJobs(ctx, s, run.GetID(), runnerLabels)
				if err != nil {
					return err
				}
				out = append(out, jobs...)
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	return out, runs, nil
}

func (c *Client) runQueuedJobs(ctx context.Context, s Scope, runID int64, runnerLabels []string) ([]Job, error) {
	opts := &gh.ListWorkflowJobsOptions{Filter: "latest", ListOptions: gh.ListOptions{PerPage: 100}}
	var out []Job
	err := eachPage(ctx, c, s, opJobs, func(ctx context.Context, page int) (*gh.Jobs, *gh.Response, error) {
		opts.Page = page
		return c.gh.Actions.ListWorkflowJobs(ctx, s.Owner, s.Repo, runID, opts)
	}, func(page *gh.Jobs) error {
		for _, j := range page.Jobs {
			running := j.GetStatus() == "in_progress" && j.GetRunnerName() != ""
			if (j.GetStatus() != "queued" && !running) || !LabelsMatch(j.Labels, runnerLabels) {
				continue
			}
			job := Job{ID: j.GetID(), RunID: j.GetRunID(), Repo: s.String(), Name: j.GetName(),
				Labels: j.Labels, CreatedAt: j.GetCreatedAt().Time}
			if running {
				job.RunnerName = j.GetRunnerName()
			}
			out = append(out, job)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LabelsMatch reports whether a runner with runnerLabels can take a job with jobLabels: every job
// label must be one of the runner's (case-insensitive), `self-hosted` being implied. A job with no
// labels matches nothing, so runner-manager never claims jobs meant for GitHub-hosted runners.
func LabelsMatch(jobLabels, runnerLabels []string) bool {
	if len(jobLabels) == 0 {
		return false
	}
	have := map[string]bool{"self-hosted": true}
	for _, l := range runnerLabels {
		have[strings.ToLower(l)] = true
	}
	for _, l := range jobLabels {
		if !have[strings.ToLower(l)] {
			return false
		}
	}
	return true
}

// Repositories lists the organisation's repositories the credential can see, skipping archived
// ones: the App installation's list for App credentials, GET /orgs/{org}/repos otherwise. The
// list is re-fetched with If-None-Match on every call, so an unchanged list is free.
func (c *Client) Repositories(ctx context.Context, s Scope) ([]Scope, error) {
	var out []Scope
	o := opOrgRepo
	if c.o.Installation {
		o = opInstRepo
	}
	err := eachPage(ctx, c, s, o, func(ctx context.Context, page int) ([]*gh.Repository, *gh.Response, error) {
		lo := gh.ListOptions{PerPage: 100, Page: page}
		if !c.o.Installation {
			return c.gh.Repositories.ListByOrg(ctx, s.Owner, &gh.RepositoryListByOrgOptions{Type: "all", ListOptions: lo})
		}
		lr, resp, err := c.gh.Apps.ListRepos(ctx, &lo)
		if lr == nil {
			return nil, resp, err
		}
		return lr.Repositories, resp, err
	}, func(repos []*gh.Repository) error {
		for _, r := range repos {
			if r.GetArchived() || !strings.EqualFold(r.GetOwner().GetLogin(), s.Owner) {
				continue
			}
			out = append(out, Scope{Owner: r.GetOwner().GetLogin(), Repo: r.GetName()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.noteRepoCount(s.Owner, len(out))
	return out, nil
}

// eachPage reads a listing page after page, each under c.call as operation o, until GitHub names
// no next page: list reads the page it is given (0 first: the first page, no page parameter), and
// each takes what it returned. An error from either ends the listing with it.
func eachPage[T any](ctx context.Context, c *Client, s Scope, o op, list func(ctx context.Context, page int) (T, *gh.Response, error), each func(T) error) error {
	page := 0
	for {
		var got T
		next := 0
		err := c.call(ctx, s, o, func(ctx context.Context) (resp *gh.Response, err error) {
			got, resp, err = list(ctx, page)
			next = nextPage(resp)
			return resp, err
		})
		if err != nil {
			return err
		}
		if err := each(got); err != nil {
			return err
		}
		if next == 0 {
			return nil
		}
		page = next
	}
}

func nextPage(resp *gh.Response) int {
	if resp == nil {
		return 0
	}
	return resp.NextPage
}
