package github

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
)

// Adaptive polling (issue 16): what a pass reads of a repository depends on what the last reads
// showed, so an idle repository costs a fraction of a request a pass.
const (
	// DefaultIdleEvery is how many passes an idle repository waits between reads by default
	// (idle_poll_interval = 4 x poll_interval).
	DefaultIdleEvery = 4
	// quietReads is how many reads in a row must all answer 304 before a repository is idle.
	quietReads = 3
	// orgListEvery is how many passes an organization's repository list is reused before it is
	// read again.
	orgListEvery = 30
)

type idleEveryKey struct{}

// WithIdleEvery sets how many passes an idle repository of this call's target waits between
// reads (its idle_poll_interval over its poll_interval); below 1 reads every pass.
func WithIdleEvery(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, idleEveryKey{}, n)
}

func idleEvery(ctx context.Context) int {
	if n, ok := ctx.Value(idleEveryKey{}).(int); ok {
		return max(n, 1)
	}
	return DefaultIdleEvery
}

// repoPace is what the client remembers of one repository's demand reads for one label set.
type repoPace struct {
	mu        sync.Mutex // held for a read: targets sharing a repository and label set take turns
	quiet     int        // reads in a row whose requests all answered 304
	skipped   int        // passes skipped since the last read
	sinceProg int        // reads since in_progress runs were last read
	active    bool       // the last read showed a run queued or in progress (true before the first)
	jobs      []Job      // what the last read found
}

// idle: its last reads changed nothing and showed no run.
func (p *repoPace) idle() bool { return p.quiet >= quietReads && !p.active }

// orgPace is an organization's repository list, reused for orgListEvery passes.
type orgPace struct {
	repos  []Scope
	passes int
}

type paceBook struct {
	mu    sync.Mutex
	repos map[string]*repoPace // "owner/repo|labels" -> pace
	orgs  map[string]*orgPace  // lower-case org + "|" + kind
}

func (b *paceBook) repo(s Scope, labels []string) *repoPace {
	key := strings.ToLower(s.String()) + "|" + strings.ToLower(strings.Join(labels, ","))
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.repos == nil {
		b.repos = map[string]*repoPace{}
	}
	p := b.repos[key]
	if p == nil {
		p = &repoPace{active: true}
		b.repos[key] = p
	}
	return p
}

func (b *paceBook) org(s Scope) *orgPace {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.orgs == nil {
		b.orgs = map[string]*orgPace{}
	}
	key := strings.ToLower(s.Owner)
	p := b.orgs[key]
	if p == nil {
		p = &orgPace{}
		b.orgs[key] = p
	}
	return p
}

// tally counts the requests of one read and how many the ETag cache answered from a 304.
type tally struct{ sent, notModified atomic.Int32 }

type tallyKey struct{}

func withTally(ctx context.Context, t *tally) context.Context {
	return context.WithValue(ctx, tallyKey{}, t)
}

// countRead records one GET answered (from a 304 when notModified) on the read in ctx, if any.
func countRead(ctx context.Context, notModified bool) {
	if t, ok := ctx.Value(tallyKey{}).(*tally); ok {
		t.sent.Add(1)
		if notModified {
			t.notModified.Add(1)
		}
	}
}

// pacedRepoJobs reads a repository's jobs as its pace allows: an idle repository is read every
// idleEvery(ctx)-th pass (the passes between reuse the last, empty, answer); in_progress runs are
// read when the last read showed a run, and every idleEvery-th read anyway, since a run can go
// from queued to in progress between two reads (a job GitHub's hosted runners took) and still hold
// a job for us (a later matrix leg, a job whose needs finished): that job then waits at most one
// idle interval, never forever.
func (c *Client) pacedRepoJobs(ctx context.Context, s Scope, labels []string) ([]Job, error) {
	p := c.pace.repo(s, labels)
	p.mu.Lock()
	defer p.mu.Unlock()
	every := idleEvery(ctx)
	if p.idle() && p.skipped+1 < every {
		p.skipped++
		return append([]Job(nil), p.jobs...), nil
	}
	p.skipped = 0
	statuses := runStatuses[:1]
	if p.active || p.sinceProg+1 >= every {
		statuses, p.sinceProg = runStatuses, 0
	} else {
		p.sinceProg++
	}
	t := &tally{}
	jobs, runs, err := c.repoQueuedJobs(withTally(ctx, t), s, labels, statuses)
	if err != nil {
		p.quiet, p.active = 0, true // read it all again next pass
		return nil, err
	}
	if t.sent.Load() == t.notModified.Load() {
		p.quiet++
	} else {
		p.quiet = 0
	}
	p.active, p.jobs = runs > 0, jobs
	return append([]Job(nil), jobs...), nil
}

// orgRepos is the organization's repository list, read again every orgListEvery passes (a new
// repository's jobs wait at most that long; its webhook deliveries do not).
func (c *Client) orgRepos(ctx context.Context, s Scope) ([]Scope, error) {
	p := c.pace.org(s)
	c.pace.mu.Lock()
	if p.repos != nil && p.passes < orgListEvery {
		p.passes++
		repos := p.repos
		c.pace.mu.Unlock()
		return repos, nil
	}
	c.pace.mu.Unlock()
	repos, err := c.Repositories(ctx, s)
	if err != nil {
		return nil, err
	}
	c.pace.mu.Lock()
	p.repos, p.passes = repos, 1
	c.pace.mu.Unlock()
	return repos, nil
}
