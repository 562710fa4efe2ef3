package engine

import (
	"context"
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

func (w *world) aliveNameLocked(name string) bool {
	for _, fp := range w.procs {
		if fp.name == name && fp.alive {
			return true
		}
	}
	return false
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
