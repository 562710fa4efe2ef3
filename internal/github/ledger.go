package github

import (
	"context"
	"sort"
	"time"
)

// A restarted daemon's governor must not start at a full minute of points: a crash loop under
// systemd's Restart= (or kill -9 rounds) would add a full bucket each time and earn GitHub's
// secondary limit (issue 28: 12 refusals, a peak of 900 points a minute). So what each account
// spends is journaled before it is spent and read back at the start (Restore).
//
// Points are granted ahead in chunks of the bucket's depth: before a request that the last grant
// does not cover is sent, a new grant is journaled (one synced write), and the requests of the
// next grantValid take from it. So the journal never holds less than was sent, a crash loses
// nothing, and an account spending its whole ceiling writes about 20 records a minute (600 points
// in chunks of 30), an idle one none (docs/github.md).

// Spent is one second's points of an account, as journaled.
type Spent struct {
	Unix   int64 `json:"unix"`
	Points int   `json:"points"`
}

// Ledger keeps the governor's grants across restarts (the daemon gives it the journal). Record
// gets every account's grants of the last minute and must write them durably before it returns;
// Load returns what the last Record wrote, for a new governor (a start, a new client) to Restore.
type Ledger interface {
	Record(ctx context.Context, grants map[string][]Spent) error
	Load(ctx context.Context) (map[string][]Spent, error)
}

// grantValid is how long a grant may be spent after it was journaled. Restore counts a grant as
// spent at its end, the latest moment its points can have been sent, so the minute it restores
// never misses a point the crashed governor sent.
const grantValid = 5 * time.Second

// SetLedger makes the governor journal its grants in l before it spends them (nil: it keeps none).
func (g *Governor) SetLedger(l Ledger) {
	g.ledgerMu.Lock()
	defer g.ledgerMu.Unlock()
	g.ledger = l
}

// grant makes sure the points p of a request about to be sent for account a are journaled: taken
// from a grant of the last grantValid, or from a new one journaled now. A journal that fails to
// record does not hold GitHub calls back (the state dir's failure is reported by the engine); the
// request goes out and the minute is merely not remembered.
func (g *Governor) grant(ctx context.Context, a *governed, p int) {
	g.ledgerMu.Lock()
	defer g.ledgerMu.Unlock()
	if g.ledger == nil {
		return
	}
	now := g.clock.Now()
	g.mu.Lock()
	if now.Sub(a.grantAt) < grantValid && a.advance >= p {
		a.advance -= p
		g.mu.Unlock()
		return
	}
	chunk := max(p, a.points.Burst())
	a.grants.add(now, chunk)
	a.grantAt, a.advance = now, chunk-p
	grants := make(map[string][]Spent, len(g.accounts))
	for k, o := range g.accounts {
		if s := o.grants.seconds(now); len(s) > 0 {
			grants[k] = s
		}
	}
	g.mu.Unlock()
	_ = g.ledger.Record(context.WithoutCancel(ctx), grants)
}

// Restore charges each account with what a previous run's governor was granted in the minute
// before now (as its Ledger recorded it), as if this governor had sent it: the points bucket owes
// it, so any 60 s across the restart admits no more than one governor would have.
func (g *Governor) Restore(grants map[string][]Spent) {
	now := g.clock.Now()
	for k, secs := range grants {
		a := g.account(k)
		sort.Slice(secs, func(i, j int) bool { return secs[i].Unix < secs[j].Unix })
		g.mu.Lock()
		for _, s := range secs {
			at := time.Unix(s.Unix, 0).Add(grantValid)
			if now.Sub(at) >= time.Minute || s.Points <= 0 {
				continue
			}
			if at.After(now) {
				at = now
			}
			for left := s.Points; left > 0; {
				n := min(left, a.points.Burst())
				a.points.ReserveN(at, n)
				left -= n
			}
			a.sent.add(at, s.Points)
			a.grants.add(at, s.Points)
		}
		g.mu.Unlock()
	}
}

// seconds lists the minute's non-empty seconds, oldest first.
func (m *minute) seconds(now time.Time) []Spent {
	s := now.Unix()
	var out []Spent
	for i := range m.sec {
		if m.pts[i] > 0 && m.sec[i] <= s && s-m.sec[i] < 60 {
			out = append(out, Spent{Unix: m.sec[i], Points: m.pts[i]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Unix < out[j].Unix })
	return out
}
