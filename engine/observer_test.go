package engine

import (
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

// recorder is an Observer (with the optional ForgetTarget) that keeps every call.
type recorder struct {
	mu         sync.Mutex
	passes     map[string][]error
	durations  []time.Duration
	runners    map[string]map[string]int // target -> latest counts
	pickedUp   map[string]int
	scaleUp    map[string][]time.Duration // "target stage" -> observations in order
	forgotten  []string
	setsAfterF int // SetRunners calls for a target after it was forgotten
}

func newRecorder() *recorder {
	return &recorder{passes: map[string][]error{}, runners: map[string]map[string]int{},
		pickedUp: map[string]int{}, scaleUp: map[string][]time.Duration{}}
}

func (r *recorder) ObserveReconcile(target string, d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.passes[target] = append(r.passes[target], err)
	r.durations = append(r.durations, d)
}

func (r *recorder) JobPickedUp(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pickedUp[target]++
}

func (r *recorder) ObserveScaleUp(target, stage string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scaleUp[target+" "+stage] = append(r.scaleUp[target+" "+stage], d)
}

func (r *recorder) SetRunners(target string, counts map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.Contains(r.forgotten, target) {
		r.setsAfterF++
	}
	r.runners[target] = maps.Clone(counts)
}

func (r *recorder) ForgetTarget(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgotten = append(r.forgotten, target)
	delete(r.runners, target)
}

func (r *recorder) snapshot(target string) (passes []error, runners map[string]int, picked int, scale map[string][]time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	scale = map[string][]time.Duration{}
	for k, v := range r.scaleUp {
		scale[k] = slices.Clone(v)
	}
	return slices.Clone(r.passes[target]), maps.Clone(r.runners[target]), r.pickedUp[target], scale
}

func observedHarness(t *testing.T) (*harness, *recorder) {
	h := newHarness(t)
	rec := newRecorder()
	h.s.deps.Observer = rec
	return h, rec
}

func TestObserverFollowsAJobFromQueuedToPickedUp(t *testing.T) {
	h, rec := observedHarness(t)
	// Two jobs queued 90 s and 89 s before the first pass.
	h.w.since["repo:acme/a"] = h.clock.Now().Add(-90 * time.Second)
	h.w.setQueued("repo:acme/a", 2)
	h.begin(cfgOf(baseTarget("a")))

	passes, runners, picked, scale := rec.snapshot("a")
	if len(passes) != 1 || passes[0] != nil {
		t.Fatalf("after one healthy pass: reconciles %v, want one with no error", passes)
	}
	if !reflect.DeepEqual(runners, map[string]int{"started": 2}) {
		t.Fatalf("runners after launching two: %v", runners)
	}
	want := []time.Duration{90 * time.Second, 89 * time.Second} // oldest job first
	if got := scale["a "+StageQueuedToStarted]; !reflect.DeepEqual(got, want) {
		t.Fatalf("queued_to_started = %v, want %v", got, want)
	}
	if picked != 0 {
		t.Fatalf("picked up %d before any job was taken", picked)
	}

	h.w.takeJobs("repo:acme/a")
	h.tick(poll, 1, "a")
	_, runners, picked, scale = rec.snapshot("a")
	if picked != 2 || !reflect.DeepEqual(runners, map[string]int{"busy": 2}) {
		t.Fatalf("after both runners took a job: picked %d, runners %v", picked, runners)
	}
	// Seen busy on the pass 30 s after they started.
	if got := scale["a "+StageStartedToInProgress]; !reflect.DeepEqual(got, []time.Duration{poll, poll}) {
		t.Fatalf("started_to_in_progress = %v, want two of %s", got, poll)
	}
	if got := scale["a "+StageQueuedToInProgress]; !slices.Equal(sorted(got), []time.Duration{119 * time.Second, 120 * time.Second}) {
		t.Fatalf("queued_to_in_progress = %v, want 119s and 120s", got)
	}

	h.w.finishJobs("repo:acme/a")
	h.tick(poll, 1, "a")
	passes, runners, picked, _ = rec.snapshot("a")
	if len(runners) != 0 || picked != 2 || len(passes) != 3 {
		t.Fatalf("after the jobs ended: runners %v (want no state), picked %d, passes %d", runners, picked, len(passes))
	}

	// Removing the target: its loop drains an empty journal, ends, and its series are forgotten.
	before := h.passCount("a")
	h.apply(cfgOf())
	h.waitPass("a", before)
	h.settle(0)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !reflect.DeepEqual(rec.forgotten, []string{"a"}) || rec.setsAfterF != 0 {
		t.Fatalf("forgotten %v (%d reports after), want a once at the loop's end", rec.forgotten, rec.setsAfterF)
	}
	for _, d := range rec.durations {
		if d != 0 { // the fake clock does not move during a pass
			t.Fatalf("pass duration %s on a frozen clock", d)
		}
	}
}

func TestObserverMatchesNewRunnersWithJobsNotAlreadyCovered(t *testing.T) {
	h, rec := observedHarness(t)
	h.w.since["repo:acme/a"] = h.clock.Now().Add(-90 * time.Second)
	h.w.setQueued("repo:acme/a", 1)
	h.begin(cfgOf(baseTarget("a")))
	// A second job arrives; the idle runner will take the oldest, the new one is for job 1.
	h.w.setQueued("repo:acme/a", 2)
	h.tick(poll, 1, "a")
	_, runners, _, scale := rec.snapshot("a")
	want := []time.Duration{90 * time.Second, 90*time.Second - time.Second + poll}
	if got := scale["a "+StageQueuedToStarted]; !reflect.DeepEqual(got, want) {
		t.Fatalf("queued_to_started = %v, want %v", got, want)
	}
	if runners["started"] != 2 {
		t.Fatalf("runners = %v", runners)
	}
}

func TestObserverCountsARunnerThatTookAJobWhileBeingReaped(t *testing.T) {
	h, rec := observedHarness(t)
	a := baseTarget("a")
	a.IdleTimeout = 60 * 1e9
	h.w.since["repo:acme/a"] = h.clock.Now().Add(-10 * time.Second)
	h.w.setQueued("repo:acme/a", 1)
	h.begin(cfgOf(a))
	h.w.setQueued("repo:acme/a", 0)
	// The list shows it idle, so it is reaped; the delete answers busy: it took a job after all.
	h.w.takeJobsUnseen()
	h.tick(2*time.Minute, 1, "a")
	_, runners, picked, scale := rec.snapshot("a")
	if picked != 1 || runners["busy"] != 1 {
		t.Fatalf("picked %d, runners %v; want the reaped-but-busy runner counted once", picked, runners)
	}
	want := []time.Duration{2*time.Minute + 10*time.Second}
	if got := scale["a "+StageQueuedToInProgress]; !reflect.DeepEqual(got, want) {
		t.Fatalf("queued_to_in_progress = %v, want %v", got, want)
	}
}

func TestObserverAfterRestartMeasuresFromTheJournaledStart(t *testing.T) {
	h := newHarness(t)
	h.w.since["repo:acme/a"] = h.clock.Now().Add(-10 * time.Second)
	h.w.setQueued("repo:acme/a", 1)
	cfg := cfgOf(baseTarget("a"))
	h.begin(cfg)
	h.stop() // daemon exit: the runner keeps running
	h.clock.Advance(45 * time.Second)
	h.w.takeJobs("repo:acme/a") // it took its job while no daemon watched

	h.s = h.newSupervisor()
	rec := newRecorder()
	h.s.deps.Observer = rec
	h.begin(cfg)
	_, runners, picked, scale := rec.snapshot("a")
	if picked != 1 || runners["busy"] != 1 {
		t.Fatalf("adopted runner seen busy: picked %d, runners %v", picked, runners)
	}
	if got := scale["a "+StageStartedToInProgress]; !reflect.DeepEqual(got, []time.Duration{45 * time.Second}) {
		t.Fatalf("started_to_in_progress = %v, want 45s from the journaled start", got)
	}
	if got := scale["a "+StageQueuedToInProgress]; len(got) != 0 {
		t.Fatalf("queued_to_in_progress = %v for a runner launched by the previous daemon, want none", got)
	}
}

func TestObserverCountsFailedPassesButNotOnesCutByAStop(t *testing.T) {
	h, rec := observedHarness(t)
	h.w.setFail("repo:acme/a", errOffline)
	h.w.block["repo:acme/slow"] = make(chan struct{}) // never closed: slow's pass hangs until the stop
	h.apply(cfgOf(baseTarget("a"), baseTarget("slow")))
	h.run()
	h.waitPass("a", 0)
	h.settle(1)
	h.stop()
	passes, runners, _, _ := rec.snapshot("a")
	if len(passes) != 1 || passes[0] == nil {
		t.Fatalf("a's failed pass: %v, want one error", passes)
	}
	if runners == nil || len(runners) != 0 {
		t.Fatalf("runners = %v: the journal's counts (none) must be reported even when GitHub failed", runners)
	}
	if p, _, _, _ := rec.snapshot("slow"); len(p) != 0 {
		t.Fatalf("a pass cut short by the stop was reported: %v", p)
	}
}

func TestJobWaits(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	jobs := []Job{{ID: 3, QueuedAt: at(30)}, {ID: 1, QueuedAt: at(10)}, {ID: 9}, {ID: 2, QueuedAt: at(20)}}
	tests := []struct {
		covered int
		want    []time.Time
	}{
		{0, []time.Time{at(10), at(20), at(30)}},
		{1, []time.Time{at(20), at(30)}},
		{3, nil},
		{7, nil},
		{-1, []time.Time{at(10), at(20), at(30)}},
	}
	for _, tc := range tests {
		if got := jobWaits(jobs, tc.covered); !slices.Equal(got, tc.want) {
			t.Errorf("jobWaits(covered %d) = %v, want %v", tc.covered, got, tc.want)
		}
	}
}

func sorted(ds []time.Duration) []time.Duration {
	out := slices.Clone(ds)
	slices.Sort(out)
	return out
}
