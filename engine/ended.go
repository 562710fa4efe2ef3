package engine

import (
	"context"
	"sync/atomic"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// concludeEnded concludes, from the journal and the launcher alone, the loop's runners that
// ended by themselves: a process that exited 0 (a just-in-time runner does only after its one
// job, whose completion removed it at GitHub: execute needs no DELETE, o.Gone), or one such
// already marked exited. It answers how many attempts the loop still owns (-1: unknown).
func (l *loop) concludeEnded(ctx context.Context, t config.Target) int {
	live, err := l.sup.deps.Journal.Live(ctx)
	if err != nil {
		return -1
	}
	owned := l.owned(live)
	left := len(owned)
	none := githubView{at: l.sup.clock.Now()}
	for _, a := range owned {
		if ctx.Err() != nil {
			return -1
		}
		if !l.endedByItself(a) {
			continue
		}
		l.step.begin(l.sup.clock.Now())
		if n, err := l.reconcile(ctx, t, a, &none, false); err == nil && n.State.Terminal() {
			left--
		}
	}
	return left
}

// endedByItself: a's runner ended on its own after its job (concludeEnded).
func (l *loop) endedByItself(a journal.Attempt) bool {
	switch a.State {
	case journal.StateExited:
		return l.finished[a.ID]
	case journal.StateStarted, journal.StateBusy:
		return l.exitedZero(a)
	}
	return false
}

// exitedZero says whether the shim wrote a's runner's exit status 0. Safe beside the loop.
func (l *loop) exitedZero(a journal.Attempt) bool {
	if a.RuntimeDir == "" {
		return false
	}
	st, err := l.sup.deps.Launcher.ExitStatus(a.RuntimeDir)
	return err == nil && st.Exited && st.Code == 0
}

// unlessItEnds runs call (a request about a's runner, which may wait for the request governor)
// and cuts it short when the runner ends by itself meanwhile (exit 0, looked at every DrainPoll):
// its end says GitHub removed it with its job, so whatever call asked of GitHub is moot. ended
// says whether that cut it; the runner is then concluded without GitHub (concludeEnded, the next
// pass). A drain reaping a runner whose job just ended (the list did not show it busy) waited 9 s
// for its DELETE's points at a fleet's shared ceiling, close to its bound
// (TestDrainReapDoesNotWaitForARunnerThatEnds).
func (l *loop) unlessItEnds(ctx context.Context, a journal.Attempt, call func(context.Context) error) (ended bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var itEnded atomic.Bool
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			timer, stop := l.sup.clock.Timer(l.sup.opts.DrainPoll)
			select {
			case <-ctx.Done():
				stop()
				return
			case <-timer:
			}
			if l.exitedZero(a) {
				itEnded.Store(true)
				cancel()
				return
			}
		}
	}()
	err = call(ctx)
	cancel()
	<-watched
	if itEnded.Load() {
		return true, nil
	}
	return false, err
}
