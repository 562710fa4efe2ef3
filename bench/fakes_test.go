package bench

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/engine/enginetest"
)

// host fakes GitHub (Demand, Registrar) and the runner processes (Launcher) for the engine
// benchmarks. It answers at once, so what a benchmark measures is the engine (and the journal).
type host struct {
	queued int  // jobs every target reports queued
	alive  bool // whether started runners are alive (adopt) or have exited with status 0 (conclude)

	mu      sync.Mutex
	cond    *sync.Cond
	passes  int64 // Queued calls: one per full loop pass (the runner list is read only every few passes)
	nextID  int64
	deletes int64
}

func newHost(queued int, alive bool) *host {
	h := &host{queued: queued, alive: alive}
	h.cond = sync.NewCond(&h.mu)
	return h
}

func (h *host) Queued(context.Context, config.Target) ([]engine.Job, error) {
	h.mu.Lock()
	h.passes++
	h.cond.Broadcast()
	h.mu.Unlock()
	jobs := make([]engine.Job, h.queued)
	for i := range jobs {
		jobs[i] = engine.Job{ID: int64(i + 1), Labels: []string{"bench"}}
	}
	return jobs, nil
}

func (h *host) JITConfig(context.Context, config.Target, engine.JITRequest) (engine.Registration, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	return engine.Registration{RunnerID: h.nextID, JITConfig: "jit"}, nil
}

func (h *host) Runners(context.Context, config.Target) ([]engine.Runner, error) {
	return nil, nil
}

func (h *host) DeleteRunner(context.Context, config.Target, int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deletes++
	return nil
}

func (h *host) Prepare(context.Context, config.Target, string) error { return nil }

func (h *host) Start(context.Context, engine.LaunchSpec) (engine.Process, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	return engine.Process{PID: int(h.nextID), StartTime: 1}, nil
}

func (h *host) Stop(context.Context, engine.Process) error { return nil }
func (h *host) Alive(engine.Process) (bool, error)         { return h.alive, nil }
func (h *host) ShimProcess(string) (engine.Process, bool, error) {
	return engine.Process{}, false, nil
}
func (h *host) ExitStatus(string) (engine.ExitStatus, error) {
	return engine.ExitStatus{Exited: !h.alive}, nil
}
func (h *host) RemoveRuntimeDir(context.Context, string) error { return nil }
func (h *host) RemoveWorkDir(context.Context, string) error    { return nil }

// passCount reads the number of loop passes so far.
func (h *host) passCount() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.passes
}

// awaitPasses waits until at least n passes happened or timeout passes.
func (h *host) awaitPasses(n int64, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_ = enginetest.WaitCond(ctx, h.cond, func() bool { return h.passes >= n })
}

// writeSetup writes s (with a fresh token file) as dir/config.toml and returns its path.
func writeSetup(tb testing.TB, dir string, s Setup) string {
	tb.Helper()
	return writeSetupAs(tb, dir, s, "toml")
}

// writeSetupAs is writeSetup in format "toml" or "yaml" (dir/config.yaml).
func writeSetupAs(tb testing.TB, dir string, s Setup, format string) string {
	tb.Helper()
	if s.TokenFile == "" {
		s.TokenFile = filepath.Join(dir, "token")
		if err := os.WriteFile(s.TokenFile, []byte("ghp_bench\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	if s.StateDir == "" {
		s.StateDir = filepath.Join(dir, "state")
	}
	if s.APIURL == "" {
		s.APIURL = "http://127.0.0.1:1"
	}
	path := filepath.Join(dir, "config."+format)
	if err := os.WriteFile(path, s.Render(format), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

func mustLoad(tb testing.TB, path string) *config.Config {
	tb.Helper()
	cfg, err := config.LoadWith(path, config.Options{Environ: func() []string { return nil }})
	if err != nil {
		tb.Fatalf("generated config does not load: %v", err)
	}
	return cfg
}
