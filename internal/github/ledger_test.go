package github

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// memLedger is a journal that survives the governors it serves (a daemon's restarts).
type memLedger struct {
	mu      sync.Mutex
	grants  map[string][]Spent
	records int
}

func (l *memLedger) Record(_ context.Context, g map[string][]Spent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.grants = maps.Clone(g)
	l.records++
	return nil
}

func (l *memLedger) Load(context.Context) (map[string][]Spent, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.grants), nil
}

// crashLoop runs rounds governors one after another on one clock, as a daemon killed every life
// and restarted after down would: each spends as fast as its governor admits for life. With a
// ledger each new governor restores what the last one journaled. It returns the peak points of
// any 60 s.
func crashLoop(t *testing.T, ceiling int, l Ledger, rounds int, life, down time.Duration) int {
	t.Helper()
	_, ft := newFakeGovernor(GovernorOptions{})
	var at []time.Time
	for range rounds {
		g := NewGovernor(GovernorOptions{PointsPerMinute: ceiling}, ft, ft.Sleep)
		if l != nil {
			grants, _ := l.Load(context.Background())
			g.Restore(grants)
			g.SetLedger(l)
		}
		for end := ft.Now().Add(life); ft.Now().Before(end); {
			admitNow(t, g, "", http.MethodGet)
			at = append(at, ft.Now())
		}
		ft.Sleep(context.Background(), down) // kill -9, then systemd's Restart=
	}
	peak := 0
	for i := range at {
		j, _ := slices.BinarySearchFunc(at, at[i].Add(time.Minute), func(a, b time.Time) int { return a.Compare(b) })
		peak = max(peak, j-i)
	}
	return peak
}

// Issue 28 item 2: a crash loop (a daemon killed every 10 s and restarted 1 s later) never has
// GitHub count more than the ceiling less its margin in any minute, because each new governor
// starts owing what the journal says the last one was granted. Without the ledger (main before
// this change) every restart starts with a full bucket and the same loop goes over.
func TestGovernorRemembersItsMinuteAcrossRestarts(t *testing.T) {
	const ceiling = 600
	limit := ceiling - pointsMarginOf(ceiling)
	without := crashLoop(t, ceiling, nil, 12, 10*time.Second, time.Second)
	if peak := without; peak <= limit {
		t.Fatalf("without a ledger the crash loop peaked at %d points a minute; the test needs it over %d to mean anything", peak, limit)
	}
	l := &memLedger{}
	with := crashLoop(t, ceiling, l, 12, 10*time.Second, time.Second)
	t.Logf("peak points a minute: %d without the ledger, %d with it (ceiling %d, margin to %d)", without, with, ceiling, limit)
	if peak := with; peak > limit {
		t.Fatalf("with the ledger the crash loop peaked at %d points a minute, want at most %d", peak, limit)
	}
	// One record per grant of a bucket's depth (30 points at 600): about 20 a minute at full spend.
	if per := float64(l.records) / (12 * 11.0 / 60); per > 25 {
		t.Fatalf("%d records in %s: %.1f a minute, want about %d", l.records, 12*11*time.Second, per, ceiling/pointsBurstOf(ceiling))
	}
}

// A grant is taken before its request is sent and counted at its end when restored, so a minute
// restored right after a crash is never lighter than what was sent; one older than a minute costs
// the new governor nothing.
func TestRestoreChargesOnlyTheLastMinute(t *testing.T) {
	g, ft := newFakeGovernor(GovernorOptions{PointsPerMinute: 600})
	now := ft.Now().Unix()
	g.Restore(map[string][]Spent{"": {{Unix: now - 120, Points: 500}, {Unix: now - 2, Points: 90}}})
	if got := g.Spend()[""].Points; got != 90 {
		t.Fatalf("restored spend %d, want the last minute's 90", got)
	}
	start := ft.Now()
	admitNow(t, g, "", http.MethodGet)
	if ft.Now().Equal(start) {
		t.Fatal("a governor that owes 90 points of a 30-point bucket admitted at once")
	}
}
