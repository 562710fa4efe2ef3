package selfupdate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"
)

// busyDrainer is the engine's upgrade drain with one busy runner: it returns when released.
type busyDrainer struct {
	started  chan struct{}
	released chan struct{}
}

func newBusyDrainer() *busyDrainer {
	return &busyDrainer{started: make(chan struct{}), released: make(chan struct{})}
}

func (d *busyDrainer) UpgradeDrain(ctx context.Context) error {
	close(d.started)
	select {
	case <-d.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newOrchestrator(t *testing.T, d Drainer) (*Orchestrator, *Installer, *fakeClock) {
	in, src := installFixture(t, "v1.2.4")
	w, clk, _ := newTestWatcher(t, src)
	return &Orchestrator{Candidates: w, Drainer: d, Installer: in, Logger: slog.New(slog.DiscardHandler)}, in, clk
}

func TestUpgradeWaitsForBusyRunnerThenSwaps(t *testing.T) {
	d := newBusyDrainer()
	o, in, clk := newOrchestrator(t, d)
	done := make(chan error, 1)
	go func() { done <- o.Run(t.Context()) }()
	<-d.started
	// Hours pass with the runner busy: nothing in the upgrade path may give up or swap early.
	for range 240 {
		clk.Advance(time.Minute)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while the drain was still waiting", err)
	default:
	}
	runsVersion(t, in.Target, "1.2.3")
	close(d.released)
	if err := <-done; !errors.Is(err, ErrUpgradePending) {
		t.Fatalf("Run = %v, want ErrUpgradePending", err)
	}
	runsVersion(t, in.Target, "1.2.4")
}

func TestIdleHostUpgrades(t *testing.T) {
	o, in, _ := newOrchestrator(t, DrainFunc(func(context.Context) error { return nil }))
	if err := o.Run(t.Context()); !errors.Is(err, ErrUpgradePending) {
		t.Fatalf("Run = %v, want ErrUpgradePending", err)
	}
	runsVersion(t, in.Target, "1.2.4")
}

func TestShutdownDuringDrainSwapsNothing(t *testing.T) {
	d := newBusyDrainer()
	o, in, _ := newOrchestrator(t, d)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	<-d.started
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil on shutdown", err)
	}
	runsVersion(t, in.Target, "1.2.3")
	if _, err := os.Stat(in.Target + OldSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a .old appeared although nothing was swapped: %v", err)
	}
}

// A failed install hands the host back to the engine and keeps watching; the next good file wins.
func TestFailedInstallResumesAndWatchesOn(t *testing.T) {
	resumed := make(chan struct{}, 1)
	o, in, clk := newOrchestrator(t, DrainFunc(func(context.Context) error { return nil }))
	o.Resume = func() { resumed <- struct{}{} }
	src := o.Candidates.(*Watcher).Source
	o.Installer = &failingSwapper{next: in}
	done := make(chan error, 1)
	go func() { done <- o.Run(t.Context()) }()
	<-resumed
	clk.awaitWaiter(t) // back to watching, same stamp: no new candidate
	runsVersion(t, in.Target, "1.2.3")
	placeBin(t, "v1.2.5", src)
	clk.Advance(DefaultInterval)
	if err := <-done; !errors.Is(err, ErrUpgradePending) {
		t.Fatalf("Run = %v, want ErrUpgradePending", err)
	}
	runsVersion(t, in.Target, "1.2.5")
}

type failingSwapper struct {
	failed bool
	next   Swapper
}

func (f *failingSwapper) Install(ctx context.Context, c Candidate) error {
	if !f.failed {
		f.failed = true
		return errors.New("copy failed")
	}
	return f.next.Install(ctx, c)
}

// A drain that fails (not a shutdown) swaps nothing, hands the host back, and the watch goes on.
func TestFailedDrainResumesAndSwapsNothing(t *testing.T) {
	resumed := make(chan struct{}, 1)
	o, in, clk := newOrchestrator(t, DrainFunc(func(context.Context) error { return errors.New("journal closed") }))
	o.Resume = func() { resumed <- struct{}{} }
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	<-resumed
	clk.awaitWaiter(t)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil on shutdown", err)
	}
	runsVersion(t, in.Target, "1.2.3")
}

// The engine reports a drain superseded by a shutdown before the daemon's context ends; that is
// an abandoned upgrade, not a failure to retry.
func TestSupersededDrainAbandonsQuietly(t *testing.T) {
	superseded := errors.New("upgrade drain superseded by shutdown")
	resumed := false
	o, in, _ := newOrchestrator(t, DrainFunc(func(context.Context) error {
		return fmt.Errorf("%w: %w", context.Canceled, superseded)
	}))
	o.Resume = func() { resumed = true }
	if err := o.Run(t.Context()); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if resumed {
		t.Error("a superseded drain resumed launching; the daemon is shutting down")
	}
	runsVersion(t, in.Target, "1.2.3")
}
