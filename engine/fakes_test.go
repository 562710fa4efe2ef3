package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine/enginetest"
)

// world fakes GitHub (Demand, Registrar) and the host (Launcher) together, so it can check the
// promises across both: a busy runner is never stopped, no live runner loses its directory,
// capacity is never exceeded.
type world struct {
	t  *testing.T
	j  *enginetest.Journal
	mu sync.Mutex

	queued  map[string]int       // by identity
	since   map[string]time.Time // identity -> queued time of its job 0; job i is i seconds younger
	regs    map[int64]*ghRunner
	nextID  int64
	procs   map[string]*fproc // by runtime dir
	nextPID int
	dirs    map[string]bool
	work    map[string]string        // work directory given to Start -> the runtime directory it was started in
	limits  map[string]config.Limits // attempt id -> the limits Start was given

	starts     map[string]int // attempt id -> Start calls
	stops      map[string]int // runner name -> Stop calls
	calls      map[string]int // "Queued repo:acme/a" -> n
	running    int
	maxRunning int
	perTarget  map[string]int
	maxPer     map[string]int

	fail        map[string]error         // identity -> error for every GitHub call
	block       map[string]chan struct{} // identity -> Queued blocks until closed or ctx ends
	late        map[string]bool          // identity -> Queued answers (successfully) only once ctx has ended
	hang        map[string]bool          // "DeleteRunner repo:acme/a" -> that call hangs until ctx ends
	jitGate     chan struct{}            // non-nil: JITConfig waits for it (jitEntered says one waits)
	jitUnsent   bool                     // a JITConfig cut while it waits was never sent (the request governor's wait)
	jitEntered  chan string
	afterList   func()           // called after each Runners answer is taken, without w.mu
	nameTaken   map[string]bool  // runner names whose first JITConfig registers, then answers 409
	offline     map[string]bool  // runner names GitHub lists offline (never connected, or lost)
	allOffline  bool             // every runner is listed offline (the host cannot reach GitHub)
	holdPrepare bool             // Prepare waits until its ctx ends (a download that never finishes)
	partial     map[string]error // identity -> Queued answers its jobs with this error (Partial)
	failStart   error
	hideBusy    bool            // list busy runners as idle, like a list fetched just before a job arrived
	deaf        map[string]bool // runner names whose process ignores Stop (a hung job): only Kill ends it
	kills       map[string]int  // runner name -> Kill calls
	violations  []string
}

type ghRunner struct {
	id       int64
	name     string
	identity string
	busy     bool
}

type fproc struct {
	p      Process
	name   string
	target string
	alive  bool
	exit   *int
	oom    bool // the kernel killed a process of its cgroup past memory_max
}

func newWorld(t *testing.T, j *enginetest.Journal) *world {
	return &world{t: t, j: j, queued: map[string]int{}, since: map[string]time.Time{}, regs: map[int64]*ghRunner{}, procs: map[string]*fproc{},
		dirs: map[string]bool{}, work: map[string]string{}, limits: map[string]config.Limits{}, starts: map[string]int{}, stops: map[string]int{}, calls: map[string]int{},
		perTarget: map[string]int{}, maxPer: map[string]int{}, fail: map[string]error{}, block: map[string]chan struct{}{},
		hang: map[string]bool{}, late: map[string]bool{}, nameTaken: map[string]bool{}, offline: map[string]bool{}, partial: map[string]error{}, deaf: map[string]bool{}, kills: map[string]int{}, nextID: 100, nextPID: 1000}
}

func (w *world) call(op string, t config.Target) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls[op+" "+t.Identity()]++
	return w.fail[t.Identity()]
}

// hung blocks until ctx ends when op hangs for t (GitHub not answering); it returns ctx's error.
func (w *world) hung(ctx context.Context, op string, t config.Target) error {
	w.mu.Lock()
	h := w.hang[op+" "+t.Identity()]
	w.mu.Unlock()
	if !h {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (w *world) Queued(ctx context.Context, t config.Target) ([]Job, error) {
	if err := w.call("Queued", t); err != nil {
		return nil, err
	}
	w.mu.Lock()
	ch, late := w.block[t.Identity()], w.late[t.Identity()]
	w.mu.Unlock()
	if late {
		<-ctx.Done() // the read took the pass's whole call timeout, and then answered
	}
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	jobs := make([]Job, w.queued[t.Identity()])
	for i := range jobs {
		jobs[i] = Job{ID: int64(i + 1), Labels: t.Labels}
		if at, ok := w.since[t.Identity()]; ok {
			jobs[i].QueuedAt = at.Add(time.Duration(i) * time.Second)
		}
	}
	for _, r := range w.sortedRegs() { // in progress: job 9000+runner id
		if r.identity == t.Identity() && r.busy {
			jobs = append(jobs, Job{ID: 9000 + r.id, Labels: t.Labels, Runner: r.name})
		}
	}
	return jobs, w.partial[t.Identity()]
}

func (w *world) JITConfig(ctx context.Context, t config.Target, req JITRequest) (Registration, error) {
	if err := w.call("JITConfig", t); err != nil {
		return Registration{}, err
	}
	w.mu.Lock()
	gate, unsent := w.jitGate, w.jitUnsent
	w.mu.Unlock()
	if gate != nil {
		w.jitEntered <- req.Name
		select {
		case <-gate:
		case <-ctx.Done():
			if unsent {
				return Registration{}, fmt.Errorf("waiting for the request governor: %w: %w", ErrNotSent, ctx.Err())
			}
			return Registration{}, ctx.Err()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextID++
	w.regs[w.nextID] = &ghRunner{id: w.nextID, name: req.Name, identity: t.Identity()}
	if w.nameTaken[req.Name] {
		// The first try landed but its answer was lost; the client's retry gets 409.
		return Registration{}, fmt.Errorf("register %s: GitHub refused (409): %w", req.Name, ErrRunnerNameTaken)
	}
	return Registration{RunnerID: w.nextID, JITConfig: "SECRET-jit-" + req.Name}, nil
}

func (w *world) Runners(ctx context.Context, t config.Target) ([]Runner, error) {
	if err := w.call("Runners", t); err != nil {
		return nil, err
	}
	if err := w.hung(ctx, "Runners", t); err != nil {
		return nil, err
	}
	w.mu.Lock()
	after := w.afterList
	w.mu.Unlock()
	if after != nil {
		defer after()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Runner
	for _, r := range w.regs {
		if r.identity == t.Identity() {
			out = append(out, Runner{ID: r.id, Name: r.name, Busy: r.busy && !w.hideBusy, Online: !w.offlineLocked(r.name)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (w *world) DeleteRunner(ctx context.Context, t config.Target, id int64) error {
	if err := w.call("DeleteRunner", t); err != nil {
		return err
	}
	if err := w.hung(ctx, "DeleteRunner", t); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.regs[id]
	if !ok || r.identity != t.Identity() {
		return nil
	}
	if r.busy {
		return ErrRunnerBusy
	}
	delete(w.regs, id)
	return nil
}

func (w *world) offlineLocked(name string) bool { return w.allOffline || w.offline[name] }

func (w *world) Prepare(ctx context.Context, _ config.Target, dir string) error {
	w.mu.Lock()
	hold := w.holdPrepare
	w.mu.Unlock()
	if hold {
		<-ctx.Done()
		return ctx.Err()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dirs[dir] = true
	return nil
}

func (w *world) Start(_ context.Context, spec LaunchSpec) (Process, error) {
	a, err := w.j.Get(context.Background(), spec.AttemptID)
	if err != nil {
		return Process{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failStart != nil {
		return Process{}, w.failStart
	}
	if !w.dirs[spec.RuntimeDir] {
		w.violations = append(w.violations, "start without a prepared dir: "+spec.RuntimeDir)
	}
	if !strings.HasPrefix(spec.JITConfig, "SECRET-jit-") {
		w.violations = append(w.violations, "start without its JIT config")
	}
	w.starts[spec.AttemptID]++
	w.limits[spec.AttemptID] = spec.Limits
	if spec.WorkDir != "" {
		w.work[spec.WorkDir] = spec.RuntimeDir
	}
	w.nextPID++
	p := Process{PID: w.nextPID, StartTime: uint64(w.nextPID) * 10}
	w.procs[spec.RuntimeDir] = &fproc{p: p, name: a.RunnerName, target: a.Target, alive: true}
	w.running++
	w.perTarget[a.Target]++
	w.maxRunning = max(w.maxRunning, w.running)
	w.maxPer[a.Target] = max(w.maxPer[a.Target], w.perTarget[a.Target])
	return p, nil
}

func (w *world) procByPID(p Process) *fproc {
	for _, fp := range w.procs {
		if fp.p == p {
			return fp
		}
	}
	return nil
}

func (w *world) endLocked(fp *fproc, code int) {
	if !fp.alive {
		return
	}
	fp.alive, fp.exit = false, &code
	w.running--
	w.perTarget[fp.target]--
}

func (w *world) Stop(_ context.Context, p Process) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fp := w.procByPID(p)
	if fp == nil {
		return nil
	}
	w.stops[fp.name]++
	for _, r := range w.regs {
		if r.name == fp.name && !w.endedForCauseLocked(fp.name) {
			w.violations = append(w.violations, fmt.Sprintf("stopped %s while it was still registered (busy=%v)", fp.name, r.busy))
		}
	}
	if !w.deaf[fp.name] {
		w.endLocked(fp, 143)
	}
	return nil
}

// endedForCauseLocked reports whether the journal recorded runner name failed for cause
// (max_job_duration, ghost) before it was stopped: the one case a registered runner may be.
func (w *world) endedForCauseLocked(name string) bool {
	live, err := w.j.Live(context.Background())
	if err != nil {
		return false
	}
	for _, a := range live {
		if a.RunnerName == name {
			return endedForCause(a)
		}
	}
	return false
}

// Kill ends a runner at once, a deaf one too; only for one the journal ended for cause.
func (w *world) Kill(_ context.Context, p Process, dir string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fp := w.procs[dir]
	if fp == nil || fp.p != p {
		return nil
	}
	w.kills[fp.name]++
	if !w.endedForCauseLocked(fp.name) {
		w.violations = append(w.violations, "killed "+fp.name+" without a failed record for cause")
	}
	w.endLocked(fp, -1)
	return nil
}

// forgetRunners removes identity's busy registrations while their processes live on: a runner
// that keeps running after its job completed, or whose registration was deleted under it.
func (w *world) forgetRunners(identity string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for id, r := range w.regs {
		if r.identity == identity && r.busy {
			delete(w.regs, id)
			n++
		}
	}
	return n
}

func (w *world) Alive(p Process) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fp := w.procByPID(p)
	return fp != nil && fp.alive, nil
}

func (w *world) ShimProcess(dir string) (Process, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if fp, ok := w.procs[dir]; ok {
		return fp.p, true, nil
	}
	return Process{}, false, nil
}

func (w *world) ExitStatus(dir string) (ExitStatus, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if fp, ok := w.procs[dir]; ok && fp.exit != nil {
		return ExitStatus{Exited: true, Code: *fp.exit, OOMKilled: fp.oom}, nil
	}
	return ExitStatus{}, nil
}

func (w *world) RemoveRuntimeDir(_ context.Context, dir string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if fp, ok := w.procs[dir]; ok && fp.alive {
		w.violations = append(w.violations, "removed the directory of a live runner: "+dir)
	}
	delete(w.dirs, dir)
	delete(w.procs, dir)
	return nil
}

func (w *world) RemoveWorkDir(_ context.Context, dir string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rt, ok := w.work[dir]; ok && w.dirs[rt] {
		w.violations = append(w.violations, "removed the work directory of a runner whose runtime directory is still there: "+dir)
	}
	delete(w.work, dir)
	return nil
}

// workDirs lists the work directories Start was given that were not removed since.
func (w *world) workDirs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.work))
}

// takeJobs lets GitHub hand queued jobs of identity to idle online runners; returns how many.
func (w *world) takeJobs(identity string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, r := range w.sortedRegs() {
		if w.queued[identity] == 0 {
			break
		}
		if r.identity != identity || r.busy || !w.aliveNameLocked(r.name) || w.offlineLocked(r.name) {
			continue
		}
		r.busy = true
		w.queued[identity]--
		n++
	}
	return n
}

// takeJobsUnseen has every registration take a job that GitHub's runner list does not show yet
// (it still lists them idle): a reap that follows finds the delete answered busy.
func (w *world) takeJobsUnseen() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.regs {
		r.busy = true
	}
	w.hideBusy = true
}

func (w *world) sortedRegs() []*ghRunner {
	out := make([]*ghRunner, 0, len(w.regs))
	for _, r := range w.regs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (w *world) aliveNameLocked(name string) bool {
	for _, fp := range w.procs {
		if fp.name == name && fp.alive {
			return true
		}
	}
	return false
}

// exitRunners ends every running runner process of identity with code, leaving GitHub's
// registrations as they are (a runner that crashed, or ended without its job's completion).
func (w *world) exitRunners(identity string, code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.regs {
		if r.identity != identity {
			continue
		}
		for _, fp := range w.procs {
			if fp.name == r.name {
				w.endLocked(fp, code)
			}
		}
	}
}

// finishJobs completes every running job of identity: the ephemeral runner is removed by GitHub
// and its process exits 0, as a real JIT runner does.
func (w *world) finishJobs(identity string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for id, r := range w.regs {
		if r.identity != identity || !r.busy {
			continue
		}
		delete(w.regs, id)
		for _, fp := range w.procs {
			if fp.name == r.name {
				w.endLocked(fp, 0)
			}
		}
		n++
	}
	return n
}

func (w *world) setQueued(identity string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queued[identity] = n
}

// blockQueued makes Queued for identity block until the returned channel is closed (or its
// context ends).
func (w *world) blockQueued(identity string) chan struct{} {
	block := make(chan struct{})
	w.mu.Lock()
	w.block[identity] = block
	w.mu.Unlock()
	return block
}

func (w *world) setFail(identity string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fail[identity] = err
}

func (w *world) callCount(op, identity string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[op+" "+identity]
}

// counts returns alive processes and busy registrations of an identity.
func (w *world) counts(identity string) (alive, busy int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.regs {
		if r.identity == identity && r.busy {
			busy++
		}
	}
	for _, fp := range w.procs {
		if fp.alive && w.identityOfLocked(fp.name) == identity {
			alive++
		}
	}
	return alive, busy
}

func (w *world) identityOfLocked(name string) string {
	for _, r := range w.regs {
		if r.name == name {
			return r.identity
		}
	}
	return ""
}

func (w *world) checkPromises() {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.violations {
		w.t.Errorf("promise broken: %s", v)
	}
}

// rateLimitErr, authErr: errors shaped like internal/github's, classified by method.
type rateLimitErr struct{ at time.Time }

func (e rateLimitErr) Error() string         { return "rate limited until " + e.at.Format(time.RFC3339) }
func (e rateLimitErr) RetryAfter() time.Time { return e.at }

type authErr struct{}

func (authErr) Error() string      { return "401 bad credentials" }
func (authErr) Unauthorized() bool { return true }

var errOffline = errors.New("dial tcp: connection refused")
