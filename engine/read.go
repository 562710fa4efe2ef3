package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

// read is a full pass's read: the edge's begin (in a fleet, Fleet.Begin: this host's role, and a
// follower's wait for the leader's view), then readGitHub. Where the edge serves light passes (a
// host alone), deliveries that come while it reads are served by light passes in between: under
// a stretched plan an organization's read is a request per repository and may take minutes in
// the governor, and a queued job must not wait for it (e2e TestGovernorAtScale,
// TestDeliveryDoesNotWaitForAFullRead). For the same reason a watched runner that ends while the
// read runs is concluded by a light pass (Options.ExitCheck), and a shutdown cuts the read: a
// drain launches nothing, so the demand it would bring is moot, and the drain pass must come
// within the drain bound (cut is then true and the view empty). Only the read runs beside the
// loop goroutine, and it touches only what is locked (the book, status, the journal's contact
// record); a light pass is safe beside it as beside any list read before the journal (observe).
// A light pass is never run while draining, nor as recovery (its adoption events are the full
// pass's), nor beside a fleet's read (edge.servesLight): a fleet's host plans one pass of a
// target at a time.
//
// A drain's read runs beside the loop too, and every DrainPoll while it waits the loop concludes
// its runners that ended by themselves (concludeEnded), which needs nothing of GitHub: a read the
// request governor held back (a fleet stopping at once: the host elected as the others resigned
// lists for all, at its share of the ceiling) kept a drain from concluding a runner that ended a
// moment into it, past the bound (TestDrainConcludesEndedRunnersWhileItsReadWaits, e2e
// TestFleetSharesOneGitHubCeiling). Once the loop owns nothing, the read is cut where an empty
// loop would have read nothing (readsWhenEmpty), and the next pass retires the loop.
func (l *loop) read(ctx, cctx context.Context, t config.Target, recovering, draining bool) (v githubView, cut bool) {
	list := l.listNow(recovering, draining)
	begin := func(ctx context.Context) githubView {
		p, read, age, again := l.edge.begin(ctx, t, list)
		v := l.readGitHub(ctx, t, p, draining, read, age)
		v.again = again // a follower whose leader has not listed since: ask again (published)
		return v
	}
	defer func() { l.listNext = l.listNext || v.again }()
	if !draining && !l.edge.servesLight() {
		return begin(cctx), false
	}
	rctx, cancelRead := context.WithCancel(cctx)
	defer cancelRead()
	got := make(chan githubView, 1)
	go func() { got <- begin(rctx) }()
	cutRead := func() (githubView, bool) {
		cancelRead()
		<-got
		return githubView{at: l.sup.clock.Now()}, true
	}
	served := func() {
		l.pass(ctx, false, true)
		if h := l.sup.afterPass; h != nil {
			h(l.key)
		}
	}
	var shutdown, news <-chan struct{}
	if !draining {
		shutdown, news = l.sup.shutdownCh, l.news
	}
	for {
		check, stopCheck := l.readCheck(draining)
		select {
		case v := <-got:
			stopCheck()
			return v, false
		case <-shutdown:
			stopCheck()
			return cutRead()
		case <-news:
			stopCheck()
			if l.rateLimited() || ctx.Err() != nil {
				continue
			}
			served()
		case <-check:
			switch {
			case draining:
				if l.concludeEnded(ctx, t) == 0 && !l.readsWhenEmpty() {
					return cutRead()
				}
			case l.ended() && !l.rateLimited() && ctx.Err() == nil:
				served()
			}
		}
	}
}

// readCheck is the timer of read's next look at the loop's runners: every DrainPoll while
// draining, every ExitCheck where the edge serves light passes and runner processes are
// watched, else never.
func (l *loop) readCheck(draining bool) (<-chan time.Time, func()) {
	switch o := l.sup.opts; {
	case draining:
		return l.sup.clock.Timer(o.DrainPoll)
	case o.ExitCheck > 0 && len(l.procs) > 0:
		return l.sup.clock.Timer(o.ExitCheck)
	}
	return nil, func() {}
}

// githubView is what one pass learned from GitHub.
type githubView struct {
	regs   []Runner
	byName map[string]Runner
	listed bool      // the runner list answered
	at     time.Time // when the list was asked for
	demand int
	jobs   []Job            // queued ones
	jobOf  map[string]int64 // runner name -> id of the job it runs
	took   map[string]int64 // runner name -> job an in_progress delivery gave it (jobBook)
	done   map[string]bool  // runner names whose job a delivery said completed (jobBook)
	warn   string           // demand read in part (Partial): what was skipped
	err    error
	// fleetLight: a fleet's light pass on the fleet's current view (edge.light).
	fleetLight bool
	again      bool // the list was wanted and not given (edge.begin): the next pass asks again
	via        via  // how the pass read this and where it decides and publishes (edge.go)
}

// partial is the Demand error that comes with valid jobs (deps.go).
type partial interface{ Partial() bool }

// readGitHub lists the target's runners when list says so (listNow), then (unless draining) its
// queued jobs. The list is read before the journal, so any registration it shows was journaled
// first (see deleteOrphans). age is how old the list already is when it is a fleet leader's
// (edge.begin): the view's time is GitHub's answer's, which startup_timeout and settling count on.
func (l *loop) readGitHub(ctx context.Context, t config.Target, rd via, draining, list bool, age time.Duration) githubView {
	s := l.sup
	read := s.clock.Now()
	v := githubView{at: read.Add(-age), via: rd}
	if list {
		regs, err := rd.runners(ctx, t)
		if err != nil {
			v.err = fmt.Errorf("list runners of target %s: %w", t.Name, err)
			return v // without the list nothing can launch: spare the budget
		}
		s.recordContact(ctx, t)
		v.regs, v.listed, v.byName = regs, true, make(map[string]Runner, len(regs))
		for _, r := range regs {
			v.byName[r.Name] = r
		}
	}
	if draining {
		return v
	}
	jobs, err := rd.queued(ctx, t)
	var p partial
	switch {
	case err != nil && errors.As(err, &p) && p.Partial():
		v.warn = err.Error()
	case err != nil:
		v.err = fmt.Errorf("read queued jobs of target %s: %w", t.Name, err)
	}
	if v.err == nil {
		s.recordContact(ctx, t)
	}
	v.jobOf = map[string]int64{}
	for _, j := range jobs {
		if j.Runner != "" {
			v.jobOf[j.Runner] = j.ID
		}
	}
	if v.err == nil {
		l.book.polled(jobs, read, v.warn == "")
	}
	// Demand is the book's: the poll, and deliveries that came while it was read.
	v.jobs, v.took, v.done = l.book.view()
	v.demand = len(v.jobs)
	l.noteWarning(v.warn)
	return v
}

// bookView is a light pass's view: no runner list, the book's queued jobs and runner news (in a
// fleet edge.light puts the fleet's view's jobs in).
func (l *loop) bookView() githubView {
	v := githubView{at: l.sup.clock.Now()}
	v.jobs, v.took, v.done = l.book.view()
	v.demand = len(v.jobs)
	return v
}
