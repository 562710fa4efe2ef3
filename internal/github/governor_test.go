package github

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// fakeTime is a clock that only the governor's sleeps move.
type fakeTime struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeTime) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
	return nil
}

func newFakeGovernor(o GovernorOptions) (*Governor, *fakeTime) {
	ft := &fakeTime{now: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	return NewGovernor(o, ft, ft.Sleep), ft
}

func admitNow(t *testing.T, g *Governor, account, method string) {
	t.Helper()
	release, err := g.admit(context.Background(), account, method)
	if err != nil {
		t.Fatal(err)
	}
	release()
}

// TestGovernorPointsNeverExceedCeiling: whatever the demand, no 60 s window holds more than the
// ceiling less its margin (for requests that reach GitHub later than they were admitted), and the
// sustained rate is the ceiling less the bucket's depth and the margin.
func TestGovernorPointsNeverExceedCeiling(t *testing.T) {
	for _, tc := range []struct {
		ceiling, burst, margin int
	}{{60, 10, 3}, {600, 30, 30}, {90, 10, 4}} {
		g, ft := newFakeGovernor(GovernorOptions{PointsPerMinute: tc.ceiling})
		if b, m := g.o.pointsBurst(), pointsMarginOf(tc.ceiling); b != tc.burst || m != tc.margin {
			t.Fatalf("ceiling %d: burst %d, margin %d; want %d, %d", tc.ceiling, b, m, tc.burst, tc.margin)
		}
		start := ft.Now()
		var at []time.Time
		var cost []int
		for i := range 5 * tc.ceiling {
			m := http.MethodGet
			if i%7 == 0 {
				m = http.MethodDelete
			}
			admitNow(t, g, "", m)
			at, cost = append(at, ft.Now()), append(cost, points(m))
		}
		for i := range at {
			sum := 0
			for j := i; j < len(at) && at[j].Sub(at[i]) < time.Minute; j++ {
				sum += cost[j]
			}
			if sum > tc.ceiling-tc.margin {
				t.Fatalf("ceiling %d: %d points in the minute from %s, want at most %d", tc.ceiling, sum, at[i].Sub(start), tc.ceiling-tc.margin)
			}
		}
		total := 0
		for _, c := range cost {
			total += c
		}
		// (total - burst) points at (ceiling - burst - margin) a minute, give or take one request.
		want := time.Duration(float64(total-tc.burst) / float64(tc.ceiling-tc.burst-tc.margin) * float64(time.Minute))
		if got := at[len(at)-1].Sub(start); got < want-2*time.Second || got > want+2*time.Second {
			t.Fatalf("ceiling %d: %d points took %s, want about %s", tc.ceiling, total, got, want)
		}
		if st := g.Stats(); st.Waits == 0 || st.PointsPerMinute != tc.ceiling {
			t.Fatalf("stats %+v", st)
		}
	}
}

// TestGovernorMutativeBucket: ten mutative requests pass at once, then one a second.
func TestGovernorMutativeBucket(t *testing.T) {
	g, ft := newFakeGovernor(GovernorOptions{PointsPerMinute: 100000})
	start := ft.Now()
	for i := range 10 {
		admitNow(t, g, "", http.MethodPost)
		if d := ft.Now().Sub(start); d != 0 {
			t.Fatalf("mutative request %d waited %s inside the burst", i+1, d)
		}
	}
	for i := range 3 {
		admitNow(t, g, "", http.MethodPost)
		if d, want := ft.Now().Sub(start), time.Duration(i+1)*time.Second; d != want {
			t.Fatalf("mutative request %d at %s, want %s", 11+i, d, want)
		}
	}
	admitNow(t, g, "", http.MethodGet) // reads do not queue behind the mutative bucket
	if d := ft.Now().Sub(start); d != 3*time.Second {
		t.Fatalf("a GET waited for the mutative bucket (%s)", d)
	}
}

// TestGovernorConcurrency: the cap holds requests back until a slot frees; long polls do not
// take a slot; each account has its own slots and buckets.
func TestGovernorConcurrency(t *testing.T) {
	g, _ := newFakeGovernor(GovernorOptions{Concurrent: 2})
	ctx := context.Background()
	r1, _ := g.admit(ctx, "", http.MethodGet)
	r2, _ := g.admit(ctx, "", http.MethodGet)
	if st := g.Stats(); st.InFlight != 2 {
		t.Fatalf("in flight %d", st.InFlight)
	}
	third := make(chan func(), 1)
	go func() {
		r, err := g.admit(ctx, "", http.MethodGet)
		if err == nil {
			third <- r
		}
	}()
	other, err := g.admit(ctx, "other-installation", http.MethodGet)
	if err != nil {
		t.Fatal(err)
	}
	other()
	select {
	case <-third:
		t.Fatal("a third request went out with the cap at 2")
	default:
	}
	r1()
	r3 := <-third
	r1() // a second release of one slot frees nothing more
	if st := g.Stats(); st.InFlight != 2 {
		t.Fatalf("in flight %d after a double release", st.InFlight)
	}
	r2()
	r3()
	cctx, cancel := context.WithCancel(ctx)
	held := []func(){}
	for range 2 {
		r, _ := g.admit(ctx, "", http.MethodGet)
		held = append(held, r)
	}
	cancel()
	if _, err := g.admit(cctx, "", http.MethodGet); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait for a slot: %v", err)
	}
	for _, r := range held {
		r()
	}
}

// TestGovernorCancelledWaitSpendsNothing: a request whose context ends while it waits for points
// gives its reservation back, so the next one does not wait for it.
func TestGovernorCancelledWaitSpendsNothing(t *testing.T) {
	g, ft := newFakeGovernor(GovernorOptions{PointsPerMinute: 60})
	for range 10 {
		admitNow(t, g, "", http.MethodGet)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.admit(ctx, "", http.MethodDelete); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	start := ft.Now()
	admitNow(t, g, "", http.MethodGet)
	// One point at the refill of 47 a minute (60 less the depth of 10 and the margin of 3).
	if d, want := ft.Now().Sub(start), time.Minute/47; d < want-time.Millisecond || d > want+time.Millisecond {
		t.Fatalf("next GET waited %s, want %s (the cancelled DELETE's points returned)", d, want)
	}
}

// TestGovernorKeepsTheSimulatorQuiet: against a simulator enforcing 90 points a minute, a client
// governed at 60 makes 300 calls without one secondary-limit answer; the same client with the
// governor's ceiling far above the limit is refused, so the check can fail.
func TestGovernorKeepsTheSimulatorQuiet(t *testing.T) {
	for _, tc := range []struct {
		ceiling int
		refused bool
	}{{60, false}, {100000, true}} {
		s := newSimOpts(t, ghsim.Options{Limits: ghsim.Limits{PointsPerMinute: 90}})
		o := s.options()
		o.Governor = GovernorOptions{PointsPerMinute: tc.ceiling}
		c := s.clientWith(o)
		ctx := context.Background()
		var rlErr error
		for range 300 {
			if _, err := c.ListRunners(ctx, repoScope); err != nil {
				rlErr = err
				var rl *RateLimitedError
				if !errors.As(err, &rl) {
					t.Fatalf("ceiling %d: %v", tc.ceiling, err)
				}
				s.clock.Advance(rl.Until.Sub(s.clock.Now()))
			}
		}
		answers := s.srv.LimitAnswers()[ghsim.LimitPoints]
		if (answers > 0) != tc.refused || (rlErr != nil) != tc.refused {
			t.Fatalf("ceiling %d: %d secondary-limit answers (last error %v)", tc.ceiling, answers, rlErr)
		}
		if peak := s.srv.PeakPointsPerMinute(); !tc.refused && peak > 60 {
			t.Fatalf("ceiling 60: the simulator saw %d points in a minute", peak)
		}
	}
}
