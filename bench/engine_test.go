package bench

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/engine/enginetest"
	"github.com/runner-manager/runner-manager/journal"
)

// epoch is where every fake clock starts, so attempts seeded on one clock are not "idle too
// long" on the next.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// running is a supervisor started on fakes; stop cancels it and joins Run.
type running struct {
	sup   *engine.Supervisor
	clock *enginetest.FakeClock
	stop  func()
}

func startSupervisor(tb testing.TB, j engine.Journal, h *host, cfg *config.Config, dir string) running {
	tb.Helper()
	clock := enginetest.NewFakeClock(epoch)
	sup := engine.New(engine.Deps{Journal: j, Demand: h, Registrar: h, Launcher: h, Clock: clock,
		Logger: slog.New(slog.DiscardHandler)}, engine.Options{HostID: "bench", RuntimeRoot: filepath.Join(dir, "runs")})
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := sup.Apply(ctx, cfg); err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := sup.Run(ctx); err != nil {
			tb.Error(err)
		}
	}()
	return running{sup: sup, clock: clock, stop: func() { cancel(); wg.Wait() }}
}

// parked waits until every one of n loops has finished its pass and waits on its timer.
func (r running) parked(tb testing.TB, n int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.clock.BlockUntil(ctx, n); err != nil {
		tb.Fatalf("%d loops did not all park: %v", n, err)
	}
}

// BenchmarkReload1000 is the daemon's reload path for a 1,000-target file with one target edited:
// config.Load of the file, then Supervisor.Apply. It reports the Apply report's counts and how
// many loop passes the reload woke (each pass reads GitHub), with the time until they all ran.
func BenchmarkReload1000(b *testing.B) {
	const n = 1000
	dir := b.TempDir()
	s := Setup{Targets: n, HostMax: n, TargetMax: 1, PollInterval: 30 * time.Second}
	path := writeSetup(b, dir, s)
	s.TokenFile, s.StateDir, s.APIURL = filepath.Join(dir, "token"), filepath.Join(dir, "state"), "http://127.0.0.1:1"
	h := newHost(0, true)
	r := startSupervisor(b, enginetest.NewJournal("bench"), h, mustLoad(b, path), dir)
	defer r.stop()
	h.awaitPasses(n, time.Minute)
	r.parked(b, n)

	var load, apply, settle time.Duration
	var changed, restarted, unchanged, woken int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Target t0001 alternates between edited and not, so exactly one target changes per reload.
		s.Edited = 1
		if i%2 == 1 {
			s.Edited = 0
		}
		writeSetup(b, dir, s)
		before := h.passCount()
		b.StartTimer()
		t0 := time.Now()
		cfg, err := config.LoadWith(path, config.Options{Environ: func() []string { return nil }})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		rep, err := r.sup.Apply(context.Background(), cfg)
		t2 := time.Now()
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		load, apply = load+t1.Sub(t0), apply+t2.Sub(t1)
		changed, restarted = changed+len(rep.Changed), restarted+len(rep.Restarted)+len(rep.Added)+len(rep.Removed)
		unchanged += len(rep.Unchanged)
		// The fake clock never fires, so only the loops the reload concerns pass: wait for those,
		// then for every loop to park again, and count what actually ran.
		concerned := len(rep.Changed) + len(rep.Removed) + len(rep.Disabled) + len(rep.Restarted)
		if len(rep.Daemon) > 0 || len(rep.Sections) > 0 {
			concerned = n
		}
		h.awaitPasses(before+int64(concerned), 10*time.Second)
		settle += time.Since(t1)
		r.parked(b, n)
		woken += int(h.passCount() - before)
		b.StartTimer()
	}
	b.StopTimer()
	per := func(v float64) float64 { return v / float64(b.N) }
	b.ReportMetric(per(float64(load.Microseconds()))/1000, "load-ms/op")
	b.ReportMetric(per(float64(apply.Microseconds()))/1000, "apply-ms/op")
	b.ReportMetric(per(float64(settle.Microseconds()))/1000, "wake-settle-ms/op")
	b.ReportMetric(per(float64(changed)), "changed/op")
	b.ReportMetric(per(float64(restarted)), "restarted/op")
	b.ReportMetric(per(float64(unchanged)), "unchanged/op")
	b.ReportMetric(per(float64(woken)), "passes-woken/op")
}

// seedLive runs the engine on fakes until targets*per runners are started and alive, then stops
// supervising (the runners "keep running"), leaving the journal a restart recovers from. It goes
// through the real launch path so the attempts carry the policy the engine itself writes.
func seedLive(tb testing.TB, j engine.Journal, cfg *config.Config, dir string, want int) {
	tb.Helper()
	h := newHost(want/len(cfg.Targets), true)
	r := startSupervisor(tb, j, h, cfg, dir)
	defer r.stop()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		r.parked(tb, len(cfg.Targets))
		live, err := j.Live(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		if len(live) >= want {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("seeding stopped at %d of %d live attempts", len(live), want)
		}
		r.clock.Advance(time.Minute) // next pass launches more
	}
}

func cloneJournal(src *enginetest.Journal) *enginetest.Journal {
	j := enginetest.NewJournal("bench")
	for _, a := range src.All() {
		j.Put(a)
	}
	return j
}

// recoveryCase is one recovery scenario: alive runners are adopted, exited ones concluded.
type recoveryCase struct {
	name  string
	alive bool
}

var (
	adopt    = recoveryCase{"adopt", true}
	conclude = recoveryCase{"conclude", false}
)

// BenchmarkRecovery10000 is startup recovery over a journal of 10,000 attempts on the in-memory
// journal, from Supervisor.Run until every target loop has finished its recovery pass.
// live=100: a realistic host, 100 targets with one live runner each and 9,900 concluded attempts
// of history. live=10000: every attempt live (10 targets x 1,000), the worst case; every pass of
// every loop reads the whole live set, so its cost grows with targets x live attempts. adopt: every runner is
// alive and supervised again (no journal write); conclude: every runner has exited and is
// concluded (exited, deregistered, cleaned: three transitions and one GitHub delete each).
func BenchmarkRecovery10000(b *testing.B) {
	memory := func(targets, per, history int) func(testing.TB, string) journalKit {
		return func(testing.TB, string) journalKit {
			seed := enginetest.NewJournal("bench")
			return journalKit{seed: seed, seedPer: 1,
				grow: func() {
					putCopies(seed, targets*(per-1), journal.StateStarted)
					putCopies(seed, history, journal.StateCleaned)
				},
				fresh: func() (engine.Journal, func()) { return cloneJournal(seed), func() {} }}
		}
	}
	b.Run("live=100", func(b *testing.B) { benchRecovery(b, 100, 1, []recoveryCase{adopt, conclude}, memory(100, 1, 9900)) })
	b.Run("live=10000", func(b *testing.B) { benchRecovery(b, 10, 1000, []recoveryCase{adopt}, memory(10, 1000, 0)) })
}

// journalKit is a seeded journal and how to get a fresh copy of it per iteration. seedPer live
// attempts per target go through the engine's real launch path (so they carry the policy the
// engine writes); grow then adds the rest directly.
type journalKit struct {
	seed    engine.Journal
	seedPer int
	grow    func()
	fresh   func() (engine.Journal, func())
}

// putCopies adds n copies in all of the live attempts (round robin, new ids and pids) in state st:
// started copies are more live runners, cleaned ones the history a long-running host accumulates.
func putCopies(j *enginetest.Journal, n int, st journal.State) {
	live, _ := j.Live(context.Background())
	for i := range n {
		a := live[i%len(live)]
		a.ID = fmt.Sprintf("copy-%s-%06d", st, i)
		a.RunnerName, a.State, a.ShimPID, a.Slot = journal.RunnerNamePrefix+a.ID, st, 100000+i, len(live)+i
		j.Put(a)
	}
}

// BenchmarkRecoveryPebble1000 is the same on the real (pebble, synced) journal with 1,000 live
// attempts (10 targets x 100): seeding 10,000 through the journal's public API would take minutes
// (every Plan scans the live index and syncs), so the pebble share at 10,000 is read off
// journal.BenchmarkLive10000 instead.
func BenchmarkRecoveryPebble1000(b *testing.B) {
	benchRecovery(b, 10, 100, []recoveryCase{adopt, conclude}, func(tb testing.TB, dir string) journalKit {
		open := func(d string) *journal.Journal {
			j, err := journal.Open(d, journal.Options{Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return epoch }})
			if err != nil {
				tb.Fatal(err)
			}
			return j
		}
		seed := open(filepath.Join(dir, "seed"))
		n := 0
		return journalKit{seed: seed, seedPer: 100, grow: func() {}, fresh: func() (engine.Journal, func()) {
			n++
			copyDir := filepath.Join(dir, fmt.Sprintf("copy-%d", n))
			if err := seed.Checkpoint(context.Background(), copyDir); err != nil {
				tb.Fatal(err)
			}
			j := open(copyDir)
			return j, func() { _ = j.Close() }
		}}
	})
}

// benchRecovery seeds targets x per live attempts, and times each case's recovery on a fresh copy
// of that journal.
func benchRecovery(b *testing.B, targets, per int, cases []recoveryCase, journals func(testing.TB, string) journalKit) {
	dir := b.TempDir()
	// The host bound stops at config.MaxRunnersLimit; recovery adopts every live attempt whatever it is.
	cfg := mustLoad(b, writeSetup(b, dir, Setup{Targets: targets, HostMax: min(targets*per, config.MaxRunnersLimit),
		TargetMax: min(per, config.MaxRunnersLimit), PollInterval: 30 * time.Second}))
	kit := journals(b, dir)
	seedLive(b, kit.seed, cfg, dir, targets*kit.seedPer)
	kit.grow()
	fresh := kit.fresh
	for _, sc := range cases {
		b.Run(sc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				j, closeJ := fresh()
				h := newHost(0, sc.alive)
				b.StartTimer()
				r := startSupervisor(b, j, h, cfg, dir)
				r.parked(b, targets)
				b.StopTimer()
				r.stop()
				live, err := j.Live(context.Background())
				wantLive := targets * per
				if !sc.alive {
					wantLive = 0
				}
				if err != nil || len(live) != wantLive {
					b.Fatalf("after recovery %d attempts live (%v), want %d", len(live), err, wantLive)
				}
				closeJ()
			}
			b.ReportMetric(float64(targets*per), "live")
		})
	}
}
