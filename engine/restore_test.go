package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// TestRestoreAdoptsRunningRunners is the Nomad-style restore test: run runners on fakes, stop
// supervising (the run context, not a drain), start a new supervisor on the same journal, and check
// each runner was started exactly once and adopted, busy or idle.
func TestRestoreAdoptsRunningRunners(t *testing.T) {
	h := newHarness(t)
	h.w.setQueued("repo:acme/a", 3)
	cfg := cfgOf(baseTarget("a"))
	h.begin(cfg)
	h.w.setQueued("repo:acme/a", 2)
	h.w.takeJobs("repo:acme/a") // two busy, one idle
	h.stop()                    // daemon exit: stop supervising only

	h.s = h.newSupervisor()
	h.begin(cfg)

	adopted := 0
	for _, ev := range h.s.Status().Events {
		if ev.Kind == EventAdopted {
			adopted++
		}
	}
	if adopted != 3 {
		t.Fatalf("adopted %d runners, want 3", adopted)
	}
	h.w.mu.Lock()
	starts := maps.Clone(h.w.starts)
	h.w.mu.Unlock()
	if len(starts) != 3 {
		t.Fatalf("attempts started: %v", starts)
	}
	for id, n := range starts {
		if n != 1 {
			t.Fatalf("%s started %d times", id, n)
		}
	}
	if got := h.byState("a"); got["busy"] != 2 || got["started"] != 1 {
		t.Fatalf("after restore: %v, want 2 busy and 1 idle runner supervised", got)
	}
	h.w.finishJobs("repo:acme/a")
	h.tick(poll, 1, "a")
	if got := h.byState("a"); got["cleaned"] != 2 || got["started"] != 1 {
		t.Fatalf("adopted runners concluded: %v", got)
	}
	h.w.checkPromises()
}

// TestRecoveryConcludesWhatACrashLeft seeds the journal and the fakes with what kill -9 at each
// lifecycle point leaves behind, then checks one startup recovery concludes or adopts each.
func TestRecoveryConcludesWhatACrashLeft(t *testing.T) {
	h := newHarness(t)
	a := baseTarget("a")
	policy := fingerprint(a)
	type seed struct {
		state   journal.State
		reg     bool // a registration exists at GitHub
		regBusy bool
		proc    string // "", "alive", "exited"
		pidInDB bool
		target  string
		age     time.Duration   // how long before the start the attempt was planned
		want    []journal.State // the states recovery walks through, after the seeded one
		alive   bool            // process alive afterwards
	}
	seeds := map[string]seed{
		"h1-1": {state: journal.StatePlanned, reg: true, want: []journal.State{journal.StateCleaned}},
		"h1-2": {state: journal.StatePlanned, age: 3 * time.Minute, want: []journal.State{journal.StateCleaned}},
		// Planned just before the crash: its registration may still land, so it keeps its slot.
		"h1-13": {state: journal.StatePlanned},
		"h1-3":  {state: journal.StateRegistered, reg: true, want: []journal.State{journal.StateDeregistered, journal.StateCleaned}},
		"h1-4":  {state: journal.StateRegistered, reg: true, proc: "alive", alive: true, want: []journal.State{journal.StateStarted}},
		"h1-5":  {state: journal.StateStarted, reg: true, proc: "alive", pidInDB: true, alive: true},
		"h1-6":  {state: journal.StateStarted, reg: true, proc: "exited", pidInDB: true, want: []journal.State{journal.StateExited, journal.StateDeregistered, journal.StateCleaned}},
		"h1-7":  {state: journal.StateBusy, reg: true, regBusy: true, proc: "alive", pidInDB: true, alive: true},
		"h1-8":  {state: journal.StateExited, reg: true, proc: "exited", pidInDB: true, want: []journal.State{journal.StateDeregistered, journal.StateCleaned}},
		"h1-9":  {state: journal.StateDeregistered, proc: "exited", pidInDB: true, want: []journal.State{journal.StateCleaned}},
		"h1-10": {state: journal.StateFailed, reg: true, want: []journal.State{journal.StateDeregistered, journal.StateCleaned}},
		"h1-11": {state: journal.StateStarted, reg: true, proc: "alive", pidInDB: true, target: "gone",
			want: []journal.State{journal.StateDeregistered, journal.StateCleaned}},
		"h1-12": {state: journal.StateBusy, reg: true, regBusy: true, proc: "alive", pidInDB: true, target: "gone", alive: true},
	}
	for id, sd := range seeds {
		at := journal.Attempt{ID: id, Target: "a", Policy: policy, RunnerName: journal.RunnerNamePrefix + id, State: sd.state,
			CreatedAt: h.clock.Now().Add(-sd.age), UpdatedAt: h.clock.Now().Add(-sd.age)}
		if sd.target != "" {
			at.Target, at.Policy = sd.target, "repo:acme/gone x"
		}
		identity := policyIdentity(at.Policy)
		if sd.reg {
			h.w.nextID++
			h.w.regs[h.w.nextID] = &ghRunner{id: h.w.nextID, name: at.RunnerName, identity: identity, busy: sd.regBusy}
			if sd.state != journal.StatePlanned {
				at.RunnerID = h.w.nextID
			}
		}
		if sd.state != journal.StatePlanned {
			at.RuntimeDir = "/run/rm/" + id
			h.w.dirs[at.RuntimeDir] = true
		}
		if sd.proc != "" {
			h.w.nextPID++
			fp := &fproc{p: Process{PID: h.w.nextPID, StartTime: 5}, name: at.RunnerName, target: at.Target, alive: sd.proc == "alive"}
			if sd.proc == "exited" {
				code := 1
				fp.exit = &code
			} else {
				h.w.running++
			}
			h.w.procs[at.RuntimeDir] = fp
			if sd.pidInDB {
				at.ShimPID, at.ShimStart = fp.p.PID, fp.p.StartTime
			}
		}
		h.j.Put(at)
	}
	// Registrations of this host nobody journaled, and another host's: only ours go.
	h.w.regs[900] = &ghRunner{id: 900, name: "runner-manager-h1-99", identity: "repo:acme/a"}
	h.w.regs[901] = &ghRunner{id: 901, name: "runner-manager-h2-5", identity: "repo:acme/a"}

	h.apply(cfgOf(a))
	h.run()
	h.waitPass("a", 0)
	h.waitPass("gone", 0)
	h.tick(poll, 2, "a", "gone") // the gone target's stopped idle runner is concluded on its drain poll

	for id, sd := range seeds {
		got := h.j.History(id)[1:]
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, sd.want) {
			t.Errorf("%s (%s, reg %v, proc %q): recovery went %v, want %v", id, sd.state, sd.reg, sd.proc, got, sd.want)
		}
		alive, _ := h.w.Alive(Process{PID: procPID(h.w, journal.RunnerNamePrefix+id), StartTime: 5})
		if alive != sd.alive {
			t.Errorf("%s: process alive = %v, want %v", id, alive, sd.alive)
		}
	}
	h.w.mu.Lock()
	_, ours := h.w.regs[900]
	_, theirs := h.w.regs[901]
	h.w.mu.Unlock()
	if ours || !theirs {
		t.Fatalf("orphan registrations: ours still there %v, other host's still there %v (want false, true)", ours, theirs)
	}
	h.w.checkPromises()
}

func procPID(w *world, name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, fp := range w.procs {
		if fp.name == name {
			return fp.p.PID
		}
	}
	return -1
}

func TestLaunchFailuresConcludeTheirSideEffects(t *testing.T) {
	h := newHarness(t)
	h.w.failStart = errors.New("exec run.sh: permission denied")
	h.w.setQueued("repo:acme/a", 1)
	h.begin(cfgOf(baseTarget("a")))
	all := h.j.All()
	if len(all) == 0 {
		t.Fatal("no attempt")
	}
	want := []journal.State{journal.StatePlanned, journal.StateRegistered, journal.StateFailed, journal.StateDeregistered, journal.StateCleaned}
	if got := h.j.History(all[0].ID); !reflect.DeepEqual(got, want) {
		t.Fatalf("failed start went %v, want %v", got, want)
	}
	if all[0].Reason == "" {
		t.Fatal("failed attempt has no reason")
	}
	h.w.mu.Lock()
	regs, dirs := len(h.w.regs), len(h.w.dirs)
	h.w.mu.Unlock()
	if regs != 0 || dirs != 0 {
		t.Fatalf("a failed start leaked %d registrations and %d directories", regs, dirs)
	}
	if st := h.s.Status().Targets[0]; st.Backoff != "retryable" || st.LastError == "" {
		t.Fatalf("status after a failed start: %+v", st)
	}
}

func TestJITErrorAfterRegistrationIsFoundByName(t *testing.T) {
	h := newHarness(t)
	h.w.setQueued("repo:acme/a", 1)
	h.apply(cfgOf(baseTarget("a")))
	h.s.deps.Registrar = jitLost{h.w}
	h.run()
	h.waitPass("a", 0)
	h.settle(1)
	h.w.mu.Lock()
	h.w.queued["repo:acme/a"] = 0
	h.w.mu.Unlock()
	h.tick(10*poll, 1, "a") // past the backoff: the next pass lists runners and finds the name
	all := h.j.All()
	want := []journal.State{journal.StatePlanned, journal.StateFailed, journal.StateDeregistered, journal.StateCleaned}
	if got := h.j.History(all[0].ID); !reflect.DeepEqual(got, want) {
		t.Fatalf("lost JIT answer went %v, want %v", got, want)
	}
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	if len(h.w.regs) != 0 {
		t.Fatalf("registration leaked: %v", h.w.regs)
	}
}

// jitLost registers at GitHub but loses the answer, as a timeout after the request landed would.
type jitLost struct{ *world }

func (j jitLost) JITConfig(ctx context.Context, t config.Target, req JITRequest) (Registration, error) {
	if _, err := j.world.JITConfig(ctx, t, req); err != nil {
		return Registration{}, err
	}
	return Registration{}, errors.New("context deadline exceeded")
}

func TestEventLogIsBounded(t *testing.T) {
	l := newEventLog(3, slog.New(slog.NewTextHandler(io.Discard, nil)), RealClock{})
	for i := range 5 {
		l.emit(slog.LevelInfo, "a", "", EventLoop, fmt.Sprint(i))
	}
	var got []string
	for _, ev := range l.recent() {
		got = append(got, ev.Message)
	}
	if !reflect.DeepEqual(got, []string{"2", "3", "4"}) {
		t.Fatalf("ring kept %v, want the newest three oldest first", got)
	}
}

// While a's recovered runners hold the host's slots, b cannot launch beyond the host limit.
func TestRecoveredRunnersCountAgainstHostCapacity(t *testing.T) {
	h := newHarness(t)
	a := baseTarget("a")
	for i := 1; i <= 2; i++ {
		id := fmt.Sprintf("h1-%d", i)
		h.w.nextPID++
		p := Process{PID: h.w.nextPID, StartTime: 1}
		h.w.procs["/run/rm/"+id] = &fproc{p: p, name: journal.RunnerNamePrefix + id, target: "a", alive: true}
		h.w.running++
		h.w.regs[int64(i)] = &ghRunner{id: int64(i), name: journal.RunnerNamePrefix + id, identity: "repo:acme/a", busy: true}
		h.j.Put(journal.Attempt{ID: id, Target: "a", Policy: fingerprint(a), Slot: i - 1, RunnerName: journal.RunnerNamePrefix + id,
			RunnerID: int64(i), RuntimeDir: "/run/rm/" + id, ShimPID: p.PID, ShimStart: 1, State: journal.StateBusy})
	}
	h.w.setQueued("repo:acme/b", 3)
	cfg := cfgOf(a, baseTarget("b"))
	cfg.Daemon.MaxRunners = 3
	h.begin(cfg)
	if got := h.byState("b"); got["started"] != 1 {
		t.Fatalf("b with 2 of 3 host slots held by a's recovered runners: %v, want 1 started", got)
	}
	if h.j.MaxHostLive() > 3 {
		t.Fatalf("host limit exceeded: %d", h.j.MaxHostLive())
	}
}

// TestKeyedFingerprintsKeepPreviousVersionsIdleRunners: a daemon upgraded to keyed (HMAC)
// fingerprints adopts the idle runner the previous version launched under the unsalted form and
// does not replace it; a launch-policy change still does, and new attempts carry the keyed form,
// which reveals nothing of env without the host's key.
func TestKeyedFingerprintsKeepPreviousVersionsIdleRunners(t *testing.T) {
	h, a := startAWith(t, 0, func(a *config.Target) {
		a.MinIdle = 1
		a.Env = map[string]string{"DEPLOY_KEY": "hunter2"}
	})
	if got := h.byState("a"); got["started"] != 1 {
		t.Fatalf("before the upgrade: %v, want one idle runner", got)
	}
	h.stop()

	h.policyKey = []byte("0123456789abcdef0123456789abcdef")
	h.s = h.newSupervisor()
	h.begin(cfgOf(a))
	h.tick(poll, 1, "a")
	h.tick(poll, 1, "a")
	if got := h.byState("a"); got["started"] != 1 || got["deregistered"]+got["cleaned"] != 0 {
		t.Fatalf("after the upgrade: %v, want the previous idle runner kept", got)
	}

	a.Env = map[string]string{"DEPLOY_KEY": "rotated"}
	before := h.passCount("a")
	h.apply(cfgOf(a))
	h.waitPass("a", before)
	h.settle(1)
	keyed := fingerprintWith(h.policyKey, a)
	var current []journal.Attempt
	for _, at := range h.j.All() {
		if at.State == journal.StateStarted {
			current = append(current, at)
		}
	}
	if len(current) != 1 || current[0].Policy != keyed || !strings.HasPrefix(keyed, "repo:acme/a h1:") {
		t.Fatalf("after an env change: running %+v, want one attempt under %q", current, keyed)
	}
	if keyed == fingerprintWith([]byte("another host's key 0123456789abc"), a) || keyed == fingerprint(a) {
		t.Fatal("the keyed fingerprint does not depend on the host's key")
	}
	h.w.checkPromises()
}
