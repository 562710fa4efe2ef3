package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/runner-manager/runner-manager/internal/github"
	"github.com/runner-manager/runner-manager/journal"
)

// governorLedger keeps the request governor's grants in the journal (github.Ledger), so a
// restarted daemon does not start at a full minute of points (docs/github.md).
type governorLedger struct {
	j   *journal.Journal
	log *slog.Logger
}

func (l governorLedger) Record(ctx context.Context, grants map[string][]github.Spent) error {
	g := journal.GovernorGrants{At: time.Now().UTC(), Accounts: make(map[string][]journal.SecondPoints, len(grants))}
	for k, secs := range grants {
		out := make([]journal.SecondPoints, len(secs))
		for i, s := range secs {
			out[i] = journal.SecondPoints{Unix: s.Unix, Points: s.Points}
		}
		g.Accounts[k] = out
	}
	err := l.j.RecordGovernor(ctx, g)
	if err != nil {
		l.log.Warn("could not journal the request governor's spending; a restart now would not know it", "err", err)
	}
	return err
}

func (l governorLedger) Load(ctx context.Context) (map[string][]github.Spent, error) {
	g, err := l.j.Governor(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]github.Spent, len(g.Accounts))
	for k, secs := range g.Accounts {
		s := make([]github.Spent, len(secs))
		for i, p := range secs {
			s[i] = github.Spent{Unix: p.Unix, Points: p.Points}
		}
		out[k] = s
	}
	return out, nil
}

// seedRepoCounts gives a new client the organizations' repository counts the journal kept, so its
// first poll plan has the last run's stretch (github.Client.SeedRepoCounts).
func seedRepoCounts(j *journal.Journal, c *github.Client, log *slog.Logger) {
	b, err := j.PollPlan(context.Background())
	if err != nil {
		log.Warn("could not read the last poll plan from the journal; organizations are planned as one repository until listed", "err", err)
		return
	}
	c.SeedRepoCounts(b.RepoCounts)
}

// recordPollPlan journals what plan p was built from (each new plan: a reload, an organization's
// count changed), for seedRepoCounts after a restart.
func recordPollPlan(j *journal.Journal, gh *gitHub, p github.PollPlan, log *slog.Logger) {
	gh.mu.Lock()
	c := gh.client
	gh.mu.Unlock()
	if c == nil {
		return
	}
	b := journal.PollPlanBasis{Stretch: p.Stretch, RepoCounts: c.RepoCounts()}
	if err := j.RecordPollPlan(context.Background(), b); err != nil {
		log.Warn("could not journal the poll plan; a restart plans organizations as one repository until listed", "err", err)
	}
}
