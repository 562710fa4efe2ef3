package engine

import (
	"strings"
	"sync"
	"testing"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// countingObserver counts runner failures and launch refusals by "target/reason".
type countingObserver struct {
	nopObserver
	mu       sync.Mutex
	failed   map[string]int
	refusals map[string]int
}

func newCountingObserver() *countingObserver {
	return &countingObserver{failed: map[string]int{}, refusals: map[string]int{}}
}

func (o *countingObserver) RunnerFailed(target, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failed[target+"/"+reason]++
}

func (o *countingObserver) LaunchRefused(target, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refusals[target+"/"+reason]++
}

func (o *countingObserver) count(m map[string]int, key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return m[key]
}

// fakeDisk answers Free with one figure per path prefix (the longest prefix wins), else plenty.
type fakeDisk struct {
	mu   sync.Mutex
	free map[string]int64
	asks []string
}

func (d *fakeDisk) Free(path string) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asks = append(d.asks, path)
	best, n := "", int64(1<<40)
	for p, f := range d.free {
		if strings.HasPrefix(path, p) && len(p) > len(best) {
			best, n = p, f
		}
	}
	return n, nil
}

func (d *fakeDisk) set(prefix string, free int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.free[prefix] = free
}

// Issue 26.2: a job past memory_max is killed in its runner's cgroup; its attempt is concluded
// with failure reason out_of_memory in the journal, an event, status and the failure counter,
// and the target goes on launching. Start is given the target's limits over the daemon's.
func TestOutOfMemoryEndsTheAttemptWithItsReason(t *testing.T) {
	h := newHarness(t)
	obs := newCountingObserver()
	h.observer = obs
	h.s = h.newSupervisor()
	a := baseTarget("a")
	a.MemoryMax, a.PidsMax = 256<<20, 500
	cfg := cfgOf(a)
	cfg.Daemon.MemoryMax, cfg.Daemon.CPUs = 1<<30, 1.5
	h.w.setQueued("repo:acme/a", 1)
	h.begin(cfg)
	first := h.j.All()[0].ID
	h.w.mu.Lock()
	got := h.w.limits[first]
	h.w.mu.Unlock()
	if want := (config.Limits{MemoryMax: 256 << 20, CPUs: 1.5, PidsMax: 500}); got != want {
		t.Fatalf("Start was given limits %+v, want %+v (the target's, else the daemon's)", got, want)
	}
	h.w.takeJobs("repo:acme/a")
	h.tick(poll, 1, "a")
	// The job is killed for its memory; the runner reports the job failed and exits 0 on its own.
	h.w.mu.Lock()
	for _, fp := range h.w.procs {
		fp.oom = true
	}
	h.w.mu.Unlock()
	h.w.finishJobs("repo:acme/a")
	h.tick(poll, 1, "a")
	if got := h.j.History(first); len(got) < 2 || got[len(got)-1] != journal.StateCleaned {
		t.Fatalf("the attempt went %v, want it concluded", got)
	}
	if at, _ := h.j.Get(h.deadline(), first); !strings.HasPrefix(at.Reason, ReasonOutOfMemory+": ") {
		t.Errorf("journal reason = %q, want it to start with %s", at.Reason, ReasonOutOfMemory)
	}
	if st := h.s.Status().Targets[0]; st.Failures[ReasonOutOfMemory] != 1 {
		t.Errorf("status failures %v, want one %s", st.Failures, ReasonOutOfMemory)
	}
	if evs := h.events(ReasonOutOfMemory); len(evs) != 1 || evs[0].Kind != EventExited || !strings.Contains(evs[0].Message, "memory_max") {
		t.Errorf("events naming the reason: %+v, want one exited event that names memory_max", evs)
	}
	if n := obs.count(obs.failed, "a/"+ReasonOutOfMemory); n != 1 {
		t.Errorf("observer told of %d out_of_memory failures, want 1", n)
	}
	// A runner that ends without an out-of-memory kill is no failure.
	h.w.setQueued("repo:acme/a", 1)
	h.tick(poll, 1, "a")
	h.runJobsOfA()
	if st := h.s.Status().Targets[0]; st.Failures[ReasonOutOfMemory] != 1 || st.Failures[ReasonLaunchFailed] != 0 {
		t.Errorf("after a healthy job: failures %v, want still one %s", st.Failures, ReasonOutOfMemory)
	}
}

// Issue 26.4: no launch while a filesystem a launch writes to has less than min_free_disk free.
// Status, one event and the refusal counter say why, the pass backs off like any failed pass,
// and the job waiting is served once space is freed.
func TestLowDiskRefusesLaunchesUntilSpaceIsFreed(t *testing.T) {
	for _, tc := range []struct {
		name, full string // the path prefix whose filesystem is short
		workDir    string
	}{
		{"state dir", "/var/lib/runner-manager", ""},
		{"runtime root", "/run/rm", ""},
		{"work dir", "/srv/work", "/srv/work"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			obs := newCountingObserver()
			disk := &fakeDisk{free: map[string]int64{tc.full: 200 << 20}}
			h.observer, h.disk = obs, disk
			h.s = h.newSupervisor()
			a := baseTarget("a")
			a.WorkDir = tc.workDir
			cfg := cfgOf(a)
			cfg.Daemon.StateDir, cfg.Daemon.MinFreeDisk = "/var/lib/runner-manager", 1<<30
			h.w.setQueued("repo:acme/a", 1)
			h.begin(cfg)
			if n := len(h.j.All()); n != 0 {
				t.Fatalf("%d attempts planned with 200MiB free under min_free_disk 1GiB, want none", n)
			}
			st := h.s.Status().Targets[0]
			if !strings.Contains(st.LastError, "min_free_disk (1GiB)") || !strings.Contains(st.LastError, tc.full) || st.Backoff != string(ClassRetryable) {
				t.Fatalf("status: last_error %q, backoff %q; want the short filesystem named and a retryable backoff", st.LastError, st.Backoff)
			}
			h.tick(poll, 1, "a")
			if n := len(h.j.All()); n != 0 {
				t.Fatalf("%d attempts planned on the second refused pass", n)
			}
			if evs := h.eventsOf(EventDiskLow); len(evs) != 1 || !strings.Contains(evs[0].Message, "min_free_disk") {
				t.Fatalf("disk-low events %+v, want one for two refused passes", evs)
			}
			if n := obs.count(obs.refusals, "a/"+RefusalLowDisk); n != 2 {
				t.Errorf("refusals counted %d, want 2 (one per refused pass)", n)
			}
			disk.set(tc.full, 2<<30)
			h.tick(poll, 1, "a")
			if got := h.byState("a"); got["started"] != 1 {
				t.Fatalf("after space was freed: %v, want the job's runner started", got)
			}
			if evs := h.eventsOf(EventDiskLow); len(evs) != 2 || !strings.Contains(evs[1].Message, "again") {
				t.Errorf("disk-low events %+v, want a second saying launches resumed", evs)
			}
			if st := h.s.Status().Targets[0]; st.LastError != "" {
				t.Errorf("last_error %q after a healthy pass", st.LastError)
			}
		})
	}
}

// min_free_disk = 0 turns the check off, and a target's own min_free_disk wins over the daemon's.
func TestMinFreeDiskOffAndOverride(t *testing.T) {
	for _, tc := range []struct {
		name          string
		daemon, owned config.ByteSize
		launched      bool
	}{
		{"off", 0, 0, true},
		{"target lowers it", 1 << 30, 100 << 20, true},
		{"target raises it", 100 << 20, 1 << 30, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.disk = &fakeDisk{free: map[string]int64{"/": 200 << 20}}
			h.s = h.newSupervisor()
			a := baseTarget("a")
			a.MinFreeDisk = tc.owned
			cfg := cfgOf(a)
			cfg.Daemon.StateDir, cfg.Daemon.MinFreeDisk = "/var/lib/runner-manager", tc.daemon
			h.w.setQueued("repo:acme/a", 1)
			h.begin(cfg)
			if got := len(h.j.All()) == 1; got != tc.launched {
				t.Errorf("launched = %v, want %v", got, tc.launched)
			}
		})
	}
}

func (h *harness) eventsOf(kind EventKind) []Event {
	var out []Event
	for _, ev := range h.s.Status().Events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}
