package github

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// TestFleetShareFormula: a lone host has the ceiling; hosts keep a floor each; a busy host alone
// grows into the pool, busy hosts split it, and an overspent pool shrinks the shares.
func TestFleetShareFormula(t *testing.T) {
	idle := Spend{}
	for _, tc := range []struct {
		name   string
		hosts  int
		own    Spend
		others []Spend
		want   int
	}{
		{"alone", 1, Spend{Points: 900, Waiting: true}, nil, 600},
		{"three idle", 3, idle, []Spend{idle, idle}, 50 + 450},
		{"busy one, others idle", 3, Spend{Points: 450, Waiting: true}, []Spend{idle, idle}, 50 + 400 + 50},
		{"idle one beside a busy one", 3, idle, []Spend{{Points: 500, Waiting: true}, idle}, 50 + 0 + 0/2},
		{"two busy at equal parts", 3, Spend{Points: 275, Waiting: true}, []Spend{{Points: 275, Waiting: true}, idle}, 50 + 225 + 0},
		{"overspent pool", 3, Spend{Points: 400, Waiting: true}, []Spend{{Points: 300, Waiting: true}, idle}, 50 + 225 - 150/2},
		{"a busy one yields to a newcomer", 3, Spend{Points: 500, Waiting: true}, []Spend{{Waiting: true}, idle}, 50 + 225 + 0},
		{"a satisfied host keeps its spend", 3, Spend{Points: 100, Waiting: true}, []Spend{{Points: 300}, idle}, 50 + 50 + (450-300)/1},
		{"never below the floor", 3, idle, []Spend{{Points: 900, Waiting: true}, {Points: 900, Waiting: true}}, 50},
	} {
		if got := fleetShare(600, tc.hosts, tc.own, tc.others); got != tc.want {
			t.Errorf("%s: share %d, want %d", tc.name, got, tc.want)
		}
	}
}

// simHost is one host of a simulated fleet: its governor, and whether it wants GitHub now.
type simHost struct {
	g    *Governor
	busy func(at time.Duration) bool
	// limit, when set, is how many requests a busy host wants in the tick at (a host that reads
	// steadily below its share); 0: as many as its governor admits.
	limit func(at time.Duration) int
}

// errWouldWait makes a simulated request that would wait give up its reservation (and retry on
// the next tick), so one fake clock serves every host.
var errWouldWait = errors.New("would wait")

// simulateFleet runs hosts on one fake clock for d, in 100 ms ticks: each busy host sends GETs
// (and a launch's POST every tenth) as fast as its governor admits them; each host publishes its
// spend every second, and at once when it starts waiting; !shared: each host has the whole
// ceiling (degraded mode). It returns every tick's points, all
// hosts together, and each host's total.
func simulateFleet(t *testing.T, ceiling int, hosts []simHost, d time.Duration, shared bool) (perTick []int, perHost []int) {
	t.Helper()
	ft := &fakeTime{now: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	sleep := func(context.Context, time.Duration) error { return errWouldWait }
	for i := range hosts {
		hosts[i].g = NewGovernor(GovernorOptions{PointsPerMinute: ceiling, MutativeBurst: 1000}, ft, sleep)
	}
	published := make([]map[string]Spend, len(hosts))
	share := func() {
		if !shared {
			return
		}
		for i, h := range hosts {
			fs := &FleetShare{Hosts: len(hosts), Others: map[string][]Spend{}}
			for j, p := range published {
				if j != i {
					for acct, s := range p {
						fs.Others[acct] = append(fs.Others[acct], s)
					}
				}
			}
			h.g.SetFleet(fs)
		}
	}
	publish := func(i int) { published[i] = hosts[i].g.Spend() }
	share()
	perHost = make([]int, len(hosts))
	const tick = 100 * time.Millisecond
	start := ft.Now()
	for at := time.Duration(0); at < d; at += tick {
		sum, changed := 0, false
		for i, h := range hosts {
			if !h.busy(at) {
				continue
			}
			want := 0
			if h.limit != nil {
				want = h.limit(at)
			}
			for n := 0; want == 0 || n < want; n++ {
				m := http.MethodGet
				if n%10 == 9 {
					m = http.MethodPost
				}
				release, err := h.g.admit(context.Background(), "", m)
				if err != nil {
					break
				}
				release()
				sum += points(m)
				perHost[i] += points(m)
			}
			select {
			case <-h.g.Wants():
				publish(i)
				changed = true
			default:
			}
		}
		if at%time.Second == 0 {
			for i := range hosts {
				publish(i)
			}
			changed = true
		}
		if changed {
			share()
		}
		perTick = append(perTick, sum)
		ft.mu.Lock()
		ft.now = start.Add(at + tick)
		ft.mu.Unlock()
	}
	return perTick, perHost
}

// peakMinute is the most points any 60 s of ticks holds.
func peakMinute(perTick []int) int {
	const window = 600 // ticks of 100 ms
	peak, sum := 0, 0
	for i, p := range perTick {
		sum += p
		if i >= window {
			sum -= perTick[i-window]
		}
		peak = max(peak, sum)
	}
	return peak
}

// TestFleetSharedCeilingHolds: three hosts of one account, each wanting more than the whole
// ceiling, together never send more than the ceiling in any minute: when they start together,
// and when two start while one already spends the pool. Without the fleet share (each alone) the
// same demand sends three ceilings, so the check can fail.
func TestFleetSharedCeilingHolds(t *testing.T) {
	const ceiling = 600
	always := func(time.Duration) bool { return true }
	later := func(at time.Duration) bool { return at >= 3*time.Minute }
	never := func(time.Duration) bool { return false }
	for _, tc := range []struct {
		name  string
		busy  []func(time.Duration) bool
		least []int // the least each host must have sent in the 8 minutes
	}{
		{"start together", []func(time.Duration) bool{always, always, always}, []int{8 * 150, 8 * 150, 8 * 150}},
		{"two join a busy one", []func(time.Duration) bool{always, later, later}, []int{3 * 450, 5 * 120, 5 * 120}},
		// Alone it has its floor and the pool (the idle hosts keep their floors): 500 - its burst.
		{"one busy, two idle", []func(time.Duration) bool{always, never, never}, []int{8 * 450, 0, 0}},
	} {
		hosts := make([]simHost, len(tc.busy))
		for i, b := range tc.busy {
			hosts[i].busy = b
		}
		perTick, perHost := simulateFleet(t, ceiling, hosts, 8*time.Minute, true)
		if peak := peakMinute(perTick); peak > ceiling {
			t.Errorf("%s: %d points in a minute fleet-wide, over the ceiling %d (per host %v)", tc.name, peak, ceiling, perHost)
		}
		// The ceiling is used, not only respected, and no host that wants GitHub is starved.
		for i, n := range perHost {
			if n < tc.least[i] {
				t.Errorf("%s: host %d sent %d points in 8 min, want at least %d (per host %v)", tc.name, i, n, tc.least[i], perHost)
			}
		}
	}
	// The control: the same demand on three hosts that do not share (degraded mode).
	hosts := []simHost{{busy: always}, {busy: always}, {busy: always}}
	perTick, _ := simulateFleet(t, ceiling, hosts, 2*time.Minute, false)
	if peak := peakMinute(perTick); peak < 2*ceiling {
		t.Errorf("without sharing: peak %d points a minute, want about 3 ceilings", peak)
	}
}

// TestFleetShareCountsWhatAHostAlreadySpent: the leader reads steadily below its share (its
// passes, a twelfth of the ceiling) while the others are idle, so its bucket is full and part of
// its minute is spent when a burst of jobs makes all three busy (e2e/fleet
// TestFleetSharesOneGitHubCeiling): its reads, its full bucket and the shares that follow still
// fit one ceiling in every minute.
func TestFleetShareCountsWhatAHostAlreadySpent(t *testing.T) {
	const burstAt = 40 * time.Second
	for _, ceiling := range []int{120, 600} {
		reads := ceiling / 120 // a GET every tenth tick: a twelfth of the ceiling, below its share
		leader := simHost{busy: func(at time.Duration) bool { return at >= burstAt || at%time.Second == 0 },
			limit: func(at time.Duration) int {
				if at < burstAt {
					return reads
				}
				return 0
			}}
		burst := func(at time.Duration) bool { return at >= burstAt }
		hosts := []simHost{leader, {busy: burst}, {busy: burst}}
		perTick, perHost := simulateFleet(t, ceiling, hosts, 3*time.Minute, true)
		peak := peakMinute(perTick)
		if peak > ceiling {
			t.Errorf("ceiling %d: %d points in a minute fleet-wide (per host %v)", ceiling, peak, perHost)
		}
		t.Logf("ceiling %d: peak %d per host %v", ceiling, peak, perHost)
	}
}
